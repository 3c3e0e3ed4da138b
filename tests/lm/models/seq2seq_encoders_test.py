"""
AllenNLP's own Seq2SeqEncoders under the masked LM, named by their registered type in the config (`lstm`,
`pytorch_transformer`): the same model trains them with the same masking and mask accumulation, saves and
reloads them, and refuses what they cannot do in one line.
"""

import copy

import pytest
import torch
from allennlp.commands.train import train_model_from_file
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader, Vocabulary
from allennlp.models import Model
from allennlp.modules.seq2seq_encoders import LstmSeq2SeqEncoder, PytorchTransformer

from maelmo_plugin.api import MaskedElmo
from maelmo_plugin.lm.data_loaders.btbptt import BtbpttDataLoader
from maelmo_plugin.lm.models.masked_elmo_lm import MaskedElmoLanguageModel
from maelmo_plugin.lm.modules.seq2seq_lm_encoder import Seq2SeqLmEncoder
from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.lm.models import LanguageModelTestCase


class _Seq2SeqEncoderTestCase(LanguageModelTestCase):
    ENCODER: type

    def model_with(self, **overrides) -> Model:
        params = Params.from_file(self.param_file)["model"].as_dict()
        params.update(overrides)
        torch.manual_seed(3)
        return Model.from_params(vocab=self.vocab, params=Params(params))

    def test_the_config_builds_the_masked_lm_over_allennlps_encoder(self):
        assert isinstance(self.model, MaskedElmoLanguageModel)
        assert isinstance(self.model.encoder, Seq2SeqLmEncoder)
        assert isinstance(self.model.encoder.encoder, self.ENCODER)
        assert not self.model.carries_states

    def test_model_can_train_save_and_load(self):
        self.ensure_model_can_train_save_and_load(self.param_file)

    def test_the_loss_goes_down(self):
        losses = self.evaluation_losses_while_training(steps=30)
        assert losses[-1] < 0.8 * losses[0], losses

    def test_representations_are_the_embeddings_and_the_encoders_output(self):
        model = self.model.eval()
        ids = self.batch()["tokens"]["tokens"]["tokens"][:2]
        mask = ids != 0
        layers = model.representations(ids, mask)
        assert len(layers) == model.num_representation_layers() == 2
        torch.testing.assert_close(layers[0], model.embedding(ids))
        torch.testing.assert_close(layers[1], model.encoder.encoder(model.embedding(ids), mask))

    def test_batched_and_sequential_mask_accumulation_give_the_same_gradients(self):
        k = 4
        reader = DatasetReader.from_params(Params.from_file(self.param_file)["dataset_reader"])
        corpus = str(FIXTURES_ROOT / "lm" / "corpus.txt")
        batch = next(iter(BtbpttDataLoader(reader, corpus, batch_size=2, sequence_length=12, quiet=True)))
        reference = self.model_with(num_mask_sets=k, masking={"probability": 0.2}).train()
        generator_state = reference._train_generator.get_state()

        def gradients(mode, passes):
            model = self.model_with(num_mask_sets=k, masking={"probability": 0.2}, mask_accumulation=mode)
            model.load_state_dict(reference.state_dict())
            model.train()._train_generator.set_state(generator_state)
            for mask_pass in passes:
                # The loader's stateful batch: its reset_states are dropped, as the encoder carries none.
                loss = model(**batch, mask_pass=mask_pass)["loss"] / len(passes)  # as the trainer divides
                loss.backward()
            return {name: p.grad for name, p in model.named_parameters() if p.grad is not None}

        batched, sequential = gradients("batched", [None]), gradients("sequential", list(range(k)))
        assert batched.keys() == sequential.keys() and len(batched) > 3
        for name, grad in batched.items():
            torch.testing.assert_close(sequential[name], grad, atol=1e-6, rtol=1e-4, msg=name)

    def test_carrying_states_is_refused_in_one_line(self):
        with pytest.raises(
            ConfigurationError, match=r"^model.carry_states_in_evaluation: .*carries no states: remove it.$"
        ):
            self.model_with(carry_states_in_evaluation=True)


class LstmTest(_Seq2SeqEncoderTestCase):
    CONFIG = "lstm_experiment.jsonnet"
    ENCODER = LstmSeq2SeqEncoder

    def test_a_stateful_lstm_is_refused(self):
        encoder = {**Params.from_file(self.param_file)["model"]["encoder"].as_dict(), "stateful": True}
        with pytest.raises(
            ConfigurationError,
            match='stateful "lstm" \\(an AllenNLP Seq2SeqEncoder\\) would carry its states',
        ):
            self.model_with(encoder=encoder)

    def test_an_output_size_other_than_the_embeddings_is_refused(self):
        encoder = {**Params.from_file(self.param_file)["model"]["encoder"].as_dict(), "bidirectional": False}
        with pytest.raises(
            ConfigurationError, match="outputs 8 dimensions for 16 in, and the softmax is tied"
        ):
            self.model_with(encoder=encoder)

    def test_the_elmo_bilm_refuses_an_encoder_that_mixes_its_directions(self):
        params = Params.from_file(FIXTURES_ROOT / "lm" / "elmo_experiment.jsonnet")["model"].as_dict()
        params["encoder"] = {"type": "lstm", "input_size": 8, "hidden_size": 4, "bidirectional": True}
        with pytest.raises(
            ConfigurationError,
            match='must keep the two directions apart; "lstm" \\(an AllenNLP Seq2SeqEncoder\\) does not',
        ):
            Model.from_params(vocab=self.vocab, params=Params(params))

    def test_berts_output_transform_goes_with_any_encoder_and_nothing_else_is_one(self):
        model = self.model_with(output_transform="bert")
        dense = model._transform.dense
        assert model.has_bert_transform and dense.weight.shape == (16, 16)
        assert (
            torch.count_nonzero(dense.bias) == 0 and 0.01 < float(dense.weight.std()) < 0.03
        )  # BERT's N(0, 0.02)
        hidden = torch.randn(5, 16)
        expected = torch.nn.functional.linear(
            model._transform(hidden), model.embedding.weight, model._output_bias
        )
        torch.testing.assert_close(model._output_logits(hidden), expected)
        with pytest.raises(ConfigurationError, match=r"model.output_transform must be one of \('bert',\)"):
            self.model_with(output_transform="gelu")


class PytorchTransformerTest(_Seq2SeqEncoderTestCase):
    CONFIG = "pytorch_transformer_experiment.jsonnet"
    ENCODER = PytorchTransformer

    @pytest.mark.parametrize(
        "change, message",
        [
            ({"num_attention_heads": 3}, "divisible by num_heads"),
            ({"feedforward_hidden_dim": -4}, ""),
            ({"positional_encoding": "learned"}, "positional_encoding must be one of"),
        ],
    )
    def test_an_encoder_its_own_code_refuses_is_one_line_naming_it(self, change, message):
        """An invalid pytorch_transformer was a 77-line traceback, and left the run folder (issue 70)."""
        encoder = {**Params.from_file(self.param_file)["model"]["encoder"].as_dict(), **change}
        with pytest.raises(
            ConfigurationError, match=f"model.encoder \\('pytorch_transformer', an AllenNLP.*{message}"
        ) as refusal:
            self.model_with(encoder=encoder)
        assert "\n" not in str(refusal.value)

    def test_a_run_of_an_invalid_encoder_leaves_no_folder(self, tmp_path):
        overrides = {"model.encoder.num_attention_heads": 3}
        with pytest.raises(ConfigurationError, match="divisible by num_heads"):
            train_model_from_file(self.param_file, str(tmp_path / "run"), overrides=overrides)
        assert not (tmp_path / "run").exists()

    def test_a_window_or_a_line_beyond_its_learned_positions_is_refused_naming_it(self, tmp_path):
        """A line over its positions was an IndexError in maelmo-embed, where BERT* names it (issue 70)."""
        encoder = {**Params.from_file(self.param_file)["model"]["encoder"].as_dict()}
        encoder.update(positional_encoding="embedding", positional_embedding_size=8)
        model = self.model_with(encoder=encoder).eval()
        assert model.encoder.max_positions == 8
        with pytest.raises(
            ConfigurationError, match='exceeds the 8 positions of model.encoder \\("pytorch_transformer"'
        ):
            model.representations(torch.ones(1, 9, dtype=torch.long) * 5, torch.ones(1, 9, dtype=torch.bool))
        from maelmo_plugin.lm.predictors.representations import RepresentationsPredictor

        reader = DatasetReader.from_params(Params.from_file(self.param_file)["dataset_reader"])
        predictor = RepresentationsPredictor(model, reader)
        with pytest.raises(
            ValueError, match='more than the 8 positions of this model\'s encoder \\("pytorch_transformer"'
        ):
            predictor.predict_json({"sentence": "the cat sleeps on the mat in the house today"})


def test_an_unknown_encoder_type_names_both_registries():
    params = Params.from_file(FIXTURES_ROOT / "lm" / "experiment.jsonnet")
    vocab_params = params.pop("vocabulary")
    vocab = Vocabulary.from_params(vocab_params)
    model = copy.deepcopy(params["model"].as_dict())
    model["encoder"] = {"type": "lsmt", "input_size": 16}
    with pytest.raises(ConfigurationError, match=r"'lsmt' is neither .*maelmo_masked_elmo.* nor .*lstm"):
        Model.from_params(vocab=vocab, params=Params(model))


@pytest.fixture(scope="module")
def lstm_archive(tmp_path_factory) -> str:
    directory = tmp_path_factory.mktemp("lstm_lm")
    config = str(FIXTURES_ROOT / "lm" / "lstm_experiment.jsonnet")
    train_model_from_file(config, str(directory), overrides={"trainer.num_epochs": 1})
    return str(directory / "model.tar.gz")


@pytest.mark.parametrize("export", ["hf", "onnx"])
def test_the_exports_refuse_another_encoder_in_one_line_naming_it(lstm_archive, tmp_path, export):
    if export == "onnx":
        pytest.importorskip("onnx")
        from maelmo_plugin.onnx.export import export_onnx_archive as write
    else:
        from maelmo_plugin.hf.export import export_archive as write
    with pytest.raises(
        ConfigurationError, match=r'whose encoder is "lstm" \(an AllenNLP Seq2SeqEncoder\): the'
    ):
        write(lstm_archive, str(tmp_path / "export"))
    assert not (tmp_path / "export").exists()


def test_an_archive_of_an_allennlp_encoder_embeds_and_pretrains_further(lstm_archive, tmp_path, monkeypatch):
    """What reads a language model archive takes one of any encoder: the Python API (the predictor's and
    maelmo-embed's code) and continued pre-training (`training_config/lm/continue.jsonnet`)."""
    vectors = MaskedElmo.from_archive(lstm_archive).embed(["The king lived in Berlin ."])
    assert vectors[0].shape[0] == 2 and vectors[0].shape[2] == 16  # h_0 and the LSTM's output, of 16
    for name, value in {
        "MAELMO_LM_ARCHIVE": lstm_archive,
        "MAELMO_VOCAB": str(FIXTURES_ROOT / "lm" / "vocab.txt"),
        "MAELMO_TRAIN_PATH": str(FIXTURES_ROOT / "lm" / "repetitive.txt"),
        "MAELMO_VALIDATION_PATH": str(FIXTURES_ROOT / "lm" / "repetitive.txt"),
    }.items():
        monkeypatch.setenv(name, value)
    overrides = {
        "trainer.num_epochs": 1,
        "trainer.learning_rate_scheduler.warmup_steps": 1,
        "data_loader.batch_size": 4,
        "data_loader.sequence_length": 16,
        "validation_data_loader.batch_size": 4,
        "validation_data_loader.sequence_length": 16,
    }
    config = str(PROJECT_ROOT / "training_config" / "lm" / "continue.jsonnet")
    model = train_model_from_file(config, str(tmp_path / "run"), overrides=overrides)
    assert isinstance(model.encoder, Seq2SeqLmEncoder) and (tmp_path / "run" / "model.tar.gz").is_file()
