"""BERT*: `maelmo_masked_elmo_lm` with a `maelmo_transformer` encoder (a config, not a module of its own since 0.2)."""

import copy

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.models import Model

from maelmo_plugin.lm.config_upgrade import upgrade_config
from maelmo_plugin.lm.models.masked_elmo_lm import MaskedElmoLanguageModel
from maelmo_plugin.lm.modules.transformer_encoder import TransformerEncoder
from tests.lm.models import LanguageModelTestCase


class BertLanguageModelTest(LanguageModelTestCase):
    CONFIG = "bert_experiment.jsonnet"

    def test_model_can_train_save_and_load(self):
        self.ensure_model_can_train_save_and_load(self.param_file)

    def test_forward_pass_runs_correctly(self):
        assert isinstance(self.model, MaskedElmoLanguageModel)
        assert isinstance(self.model.encoder, TransformerEncoder) and self.model.has_bert_transform
        self.model.eval()
        output = self.model(**self.batch())
        assert set(output) == {"loss", "num_masked"} and output["num_masked"] > 0
        metrics = self.model.get_metrics(reset=True)
        assert metrics["perplexity"] == pytest.approx(float(output["loss"].detach().exp()), rel=1e-5)

    def test_representations_are_berts_hidden_states(self):
        """h_0 ... h_L: the embedding layer's output and each block's, as transformers' BertModel gives them."""
        model = self.model.eval()
        ids = self.batch()["tokens"]["tokens"]["tokens"][:2]
        mask = ids != 0
        layers = model.representations(ids, mask)
        assert len(layers) == model.num_representation_layers() == 3
        assert layers[0].shape == (*ids.shape, 16) and model.representation_dim() == 16
        expected = model._encoder.bert(
            inputs_embeds=model._embedding(ids), attention_mask=mask.long(), output_hidden_states=True
        ).hidden_states
        for ours, theirs in zip(layers, expected):
            torch.testing.assert_close(ours, theirs)

    def test_no_state_crosses_windows(self):
        """The loader's reset_states is ignored: a window's loss does not depend on the windows before it."""
        model = self.model
        batch = self.batch()
        rows = batch["tokens"]["tokens"]["tokens"].size(0)
        alone = model.eval()(**batch)["loss"]  # eval() re-seeds the masks: every pass masks alike
        model.train()(**batch, reset_states=torch.ones(rows, dtype=torch.bool))
        after = model.eval()(**batch, reset_states=torch.zeros(rows, dtype=torch.bool))["loss"]
        torch.testing.assert_close(after, alone)
        assert model._train_states.states is None and model._eval_states.states is None

    def test_carrying_states_is_refused_in_one_line(self):
        params = Params.from_file(self.param_file).as_dict()["model"]
        params["num_mask_sets"] = 2
        model = Model.from_params(Params(copy.deepcopy(params)), vocab=self.vocab)
        assert model.mask_accumulation_passes == 1 and model._num_mask_sets == 2
        params["carry_states_in_evaluation"] = True
        with pytest.raises(
            ConfigurationError,
            match=r"^model.carry_states_in_evaluation: .* \"maelmo_transformer\", .* carries no states: remove it.$",
        ):
            Model.from_params(Params(copy.deepcopy(params)), vocab=self.vocab)

    def test_a_config_of_0_1_0_builds_the_same_model_from_the_same_seed(self):
        """ "maelmo_bert_lm" with an encoder named without a type (every BERT* config before 0.2) builds this
        model, with the same parameters drawn in the same order: the same weights from the same seed."""
        params = Params.from_file(self.param_file).as_dict()["model"]
        legacy = {**copy.deepcopy(params), "type": "maelmo_bert_lm"}
        del legacy["output_transform"]
        del legacy["encoder"]["type"]
        assert upgrade_config(legacy) and legacy == params  # as every config file is read
        models = []
        for config in (params, legacy):
            torch.manual_seed(3)
            models.append(Model.from_params(Params(copy.deepcopy(config)), vocab=self.vocab))
        assert type(models[0]) is type(models[1]) is MaskedElmoLanguageModel
        new, old = (model.state_dict() for model in models)
        assert list(new) == list(old)
        assert all(torch.equal(new[name], old[name]) for name in new)

    def test_the_mlm_head_transforms_before_the_tied_softmax(self):
        model = self.model
        hidden = torch.randn(3, 16)
        expected = torch.nn.functional.linear(
            model._transform(hidden), model._embedding.weight, model._output_bias
        )
        torch.testing.assert_close(model._output_logits(hidden), expected)


class PreLayerNormBertLanguageModelTest(LanguageModelTestCase):
    CONFIG = "bert_pre_ln_experiment.jsonnet"

    def test_model_can_train_save_and_load(self):
        self.ensure_model_can_train_save_and_load(self.param_file)

    def test_top_layer_is_normalised_and_the_blocks_normalise_their_inputs(self):
        model = self.model.eval()
        encoder = model._encoder.bert
        assert encoder.config.model_type == "roberta-prelayernorm"
        ids = self.batch()["tokens"]["tokens"]["tokens"][:2]
        mask = ids != 0
        layers = model.representations(ids, mask)
        expected = encoder(
            inputs_embeds=model._embedding(ids), attention_mask=mask.long(), output_hidden_states=True
        )
        for ours, theirs in zip(layers[:-1], expected.hidden_states[:-1]):
            torch.testing.assert_close(ours, theirs)
        # h_L is the final LayerNorm's output (at identity gain and bias after BERT's initialisation)
        torch.testing.assert_close(layers[-1], expected.last_hidden_state)
        torch.testing.assert_close(
            layers[-1],
            torch.nn.functional.layer_norm(
                expected.hidden_states[-1], (16,), eps=encoder.config.layer_norm_eps
            ),
        )


def test_an_unknown_layer_norm_is_refused():
    with pytest.raises(ConfigurationError, match="layer_norm must be one of"):
        TransformerEncoder(input_dim=8, num_attention_heads=2, layer_norm="sandwich")


@pytest.mark.parametrize("layer_norm", ["post", "pre"])
def test_a_window_as_long_as_the_positions_is_read(layer_norm):
    encoder = TransformerEncoder(
        input_dim=8,
        num_layers=1,
        num_attention_heads=2,
        intermediate_dim=8,
        max_positions=4,
        layer_norm=layer_norm,
    )
    layers, _ = encoder(torch.zeros(1, 4, 8), torch.ones(1, 4, dtype=torch.bool))
    assert layers[-1].shape == (1, 4, 8)
    with pytest.raises(ConfigurationError, match="5 word-pieces exceeds the transformer's 4 positions"):
        encoder(torch.zeros(1, 5, 8), torch.ones(1, 5, dtype=torch.bool))


def test_heads_must_divide_the_hidden_size():
    with pytest.raises(
        ConfigurationError, match=r"input_dim \(18\) must be a multiple of num_attention_heads \(4\)"
    ):
        TransformerEncoder(input_dim=18, num_attention_heads=4)


def test_a_window_longer_than_the_positions_is_refused():
    encoder = TransformerEncoder(
        input_dim=8, num_layers=1, num_attention_heads=2, intermediate_dim=8, max_positions=4
    )
    with pytest.raises(ConfigurationError, match="5 word-pieces exceeds the transformer's 4 positions"):
        encoder(torch.zeros(1, 5, 8), torch.ones(1, 5, dtype=torch.bool))


@pytest.mark.parametrize("layer_norm", ["post", "pre"])
def test_berts_head_is_initialised_as_bert_initialises_it_from_the_encoders_config(layer_norm):
    """
    The transform takes its configuration from the encoder (`output_head_config`), and draws its weights as
    transformers' own `_init_weights` does: bit for bit, from the same generator state.
    """
    from transformers.models.bert.modeling_bert import BertPredictionHeadTransform

    from maelmo_plugin.lm.models import masked_elmo_lm

    encoder = TransformerEncoder(
        input_dim=16, num_layers=1, num_attention_heads=2, intermediate_dim=32, layer_norm=layer_norm
    )
    assert encoder.output_head_config() is encoder.config
    torch.manual_seed(3)
    ours = masked_elmo_lm._bert_transform(encoder)
    torch.manual_seed(3)
    theirs = BertPredictionHeadTransform(encoder.config)
    theirs.apply(encoder.bert._init_weights)
    assert ours.state_dict().keys() == theirs.state_dict().keys()
    for name, tensor in theirs.state_dict().items():
        assert torch.equal(ours.state_dict()[name], tensor), name
    assert ours.dense.weight.std().item() == pytest.approx(encoder.config.initializer_range, rel=0.2)


def test_the_masked_lm_imports_no_concrete_encoder():
    """Any encoder gives BERT's head what it needs through `LmEncoder`: the model names none of them."""
    import ast
    import inspect

    from maelmo_plugin.lm.models import masked_elmo_lm

    imported = {
        node.module
        for node in ast.walk(ast.parse(inspect.getsource(masked_elmo_lm)))
        if isinstance(node, ast.ImportFrom)
    }
    assert not {module for module in imported if module.startswith("maelmo_plugin.lm.modules.")} - {
        "maelmo_plugin.lm.modules.lm_encoder",
        "maelmo_plugin.lm.modules.carried_states",
    }
