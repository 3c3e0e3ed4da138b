import copy

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.testing import ModelTestCase
from allennlp.data import Batch, DatasetReader, Instance, Vocabulary
from allennlp.models import Model

from maelmo_plugin.glue.models.glue_classifier import GlueClassifier
from maelmo_plugin.lm.token_embedders import MaskedElmoTokenEmbedder, StatelessElmoTokenEmbedder
from tests import FIXTURES_ROOT

CONFIGS = FIXTURES_ROOT / "glue_models"
GLUE = FIXTURES_ROOT / "glue"

# The fixture configs read the tiny archive's and tiny ELMo's paths from the environment.
pytestmark = pytest.mark.usefixtures("with_glue_environment")


class GlueClassifierTestCase(ModelTestCase):
    """The ModelTestCase recipe for one fixture config; subclasses give the config and expectations."""

    CONFIG = "cola.jsonnet"
    DATA = "CoLA/train.tsv"
    EMBEDDER = MaskedElmoTokenEmbedder
    FINE_TUNED = True
    OUTPUT_KEYS = {"logits", "probs", "loss", "metadata"}
    METRICS = {"mcc", "glue_score"}
    NUM_OUTPUTS = 2
    POOLER_CALLS = 1  # per forward: one sentence, or the two of a pair
    # Fine-tuning the Masked ELMo archive trains every parameter that representations() uses; the LM's
    # output bias only serves its masked-token softmax, which the GLUE model never runs.
    GRADIENTS_TO_IGNORE = {"_embedder.token_embedder_tokens._language_model._output_bias"}

    def setup_method(self):
        super().setup_method()
        self.set_up_model(CONFIGS / self.CONFIG, GLUE / self.DATA)

    def batch(self, instances=None):
        return Batch(instances or self.instances).as_tensor_dict()

    def test_model_can_train_save_and_load(self):
        fine_tuned_archive = self.FINE_TUNED and self.EMBEDDER is MaskedElmoTokenEmbedder
        ignore = self.GRADIENTS_TO_IGNORE if fine_tuned_archive else None
        self.ensure_model_can_train_save_and_load(self.param_file, gradients_to_ignore=ignore)

    def test_batch_predictions_are_consistent(self):
        self.ensure_batch_predictions_are_consistent()

    def test_embedder_is_frozen_or_fine_tuned_as_configured(self):
        embedder = self.model._embedder.token_embedder_tokens
        assert isinstance(embedder, self.EMBEDDER)
        if isinstance(embedder, MaskedElmoTokenEmbedder):
            language_model = embedder._language_model
        else:
            language_model = embedder._elmo._elmo_lstm  # the character CNN and biLSTM, not the scalar mix
        assert {p.requires_grad for p in language_model.parameters()} == {self.FINE_TUNED}

    def test_forward_pass_runs_correctly(self):
        self.model.eval()
        batch_size = len(self.instances)
        output = self.model(**self.batch())
        assert set(output) == self.OUTPUT_KEYS
        assert output["loss"].shape == ()
        if "score" in output:
            assert output["score"].shape == (batch_size,)
        else:
            assert output["logits"].shape == output["probs"].shape == (batch_size, self.NUM_OUTPUTS)
            torch.testing.assert_close(output["probs"].sum(-1), torch.ones(batch_size))
        assert output["metadata"] == self.batch()["metadata"]  # passed through, for the predictor
        metrics = self.model.get_metrics(reset=True)
        assert set(metrics) == self.METRICS and all(type(value) is float for value in metrics.values())

    def pooled(self, instances):
        """The pooled sentence vectors, (batch_size, pooled_dim) per pooler call."""
        calls = []
        hook = self.model._pooler.register_forward_hook(lambda module, args, out: calls.append(out.detach()))
        try:
            self.model.eval()(**self.batch(instances))
        finally:
            hook.remove()
        assert len(calls) == self.POOLER_CALLS
        return calls

    def test_padding_does_not_change_a_sentences_pooled_output(self):
        longer = self.padding_partner()
        for instance in self.instances:
            alone = self.pooled([instance])
            padded = self.pooled([instance, longer])
            for single, batched in zip(alone, padded):
                torch.testing.assert_close(batched[:1], single, atol=1e-5, rtol=1e-5)

    def padding_partner(self) -> Instance:
        """An instance longer than every fixture row, so that they are all padded next to it."""
        reader = DatasetReader.from_params(Params.from_file(self.param_file)["dataset_reader"])
        sentence = " ".join(["the cat saw the dog by the river in the old town ."] * 3)
        task = reader.task
        label = task.labels[0] if task.labels else 2.5
        instance = reader.text_to_instance(*[sentence] * len(task.sentence_columns), label=label)
        reader.apply_token_indexers(instance)
        instance.index_fields(self.vocab)
        return instance

    def test_dropout_applies_to_the_embedding_too(self):
        """jiant's SentenceEncoder drops out the embedding before the BiLSTM and in the skip connection."""
        inputs = []
        self.model._encoder.register_forward_hook(lambda module, args, out: inputs.append(args[0]))
        self.model._dropout.p = 1.0  # everything dropped: the encoder sees zeros
        self.model.train()(**self.batch())
        assert len(inputs) == self.POOLER_CALLS and all(x.abs().sum() == 0 for x in inputs)


class CoLAArchiveFineTunedTest(GlueClassifierTestCase):
    pass


class RTEArchiveFrozenTest(GlueClassifierTestCase):
    CONFIG = "rte.jsonnet"
    DATA = "RTE/train.tsv"
    FINE_TUNED = False
    METRICS = {"accuracy", "glue_score"}
    POOLER_CALLS = 2

    def test_pair_without_attention_pools_each_projected_sentence(self):
        assert self.model._pair_attention is None
        assert self.model._pooler.projection.out_features == 8
        # [u ; v ; |u - v| ; u * v]
        assert self.model._classifier[0].in_features == 4 * 8


class MNLIElmoFineTunedTest(GlueClassifierTestCase):
    CONFIG = "mnli.jsonnet"
    DATA = "MNLI/train.tsv"
    EMBEDDER = StatelessElmoTokenEmbedder
    METRICS = {"accuracy", "glue_score"}
    NUM_OUTPUTS = 3
    POOLER_CALLS = 2

    def test_pair_with_attention_pools_the_modelling_layer(self):
        attention = self.model._pair_attention
        assert attention is not None and self.model._pooler.projection is None
        assert self.model._pooler.output_dim == attention.output_dim == 2 * 6
        assert attention.dropout.p == 0.1  # the classifier's dropout, as in jiant

    def test_premise_does_not_leak_into_the_hypothesis_through_elmo_states(self):
        """The premise runs just before the hypothesis: a stateful ELMo would carry its states over."""
        batch = self.batch()
        self.model.eval()
        embedder = self.model._embedder
        first = embedder(batch["hypothesis"])
        embedder(batch["premise"])
        torch.testing.assert_close(embedder(batch["hypothesis"]), first, atol=0, rtol=0)


class MNLIElmoFrozenTest(MNLIElmoFineTunedTest):
    CONFIG = "mnli_frozen.jsonnet"
    FINE_TUNED = False


class STSBArchiveFineTunedTest(GlueClassifierTestCase):
    CONFIG = "stsb.jsonnet"
    DATA = "STS-B/train.tsv"
    OUTPUT_KEYS = {"score", "loss", "metadata"}
    METRICS = {"pearson", "spearman", "corr", "glue_score"}
    POOLER_CALLS = 2

    def test_regression_loss_is_the_mean_squared_error_on_score_over_5(self):
        batch = self.batch()
        assert batch["label"].tolist() == pytest.approx([1.0, 0.76, 0.0])
        output = self.model.eval()(**batch)
        torch.testing.assert_close(output["loss"], torch.mean((output["score"] - batch["label"]) ** 2))


def test_encoder_that_does_not_fit_the_embedder_is_a_configuration_error():
    params = Params.from_file(str(CONFIGS / "cola.jsonnet"), params_overrides={"model.encoder.input_size": 7})
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["0", "1"], "labels")
    with pytest.raises(ConfigurationError, match="The encoder reads 7 dimensions, the embedder gives 16"):
        Model.from_params(vocab=vocab, params=params["model"])


def test_separate_skip_mix_with_a_single_mix_is_a_configuration_error():
    overrides = {"model.separate_skip_mix": True}
    params = Params.from_file(str(CONFIGS / "cola.jsonnet"), params_overrides=overrides)
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["0", "1"], "labels")
    # Half of the one 16-dimensional mix would go to the encoder, which reads 16.
    with pytest.raises(ConfigurationError, match="The encoder reads 16 dimensions, the embedder gives 8"):
        Model.from_params(vocab=vocab, params=params["model"])


def test_labels_missing_from_the_data_still_get_an_output():
    """MNLI's fixture train file has no "contradiction": the model still predicts the task's 3 labels."""
    params = Params.from_file(str(CONFIGS / "mnli.jsonnet"))
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["neutral", "entailment"], "labels")
    model = Model.from_params(vocab=vocab, params=params["model"])
    assert model._classifier[-1].out_features == 3
    assert set(vocab.get_token_to_index_vocabulary("labels")) == {"neutral", "entailment", "contradiction"}


def test_separate_skip_mix_feeds_one_mix_to_the_encoder_and_skips_the_other():
    overrides = {
        "model.separate_skip_mix": True,
        "model.text_field_embedder.token_embedders.tokens.num_output_representations": 2,
    }
    params = Params.from_file(str(CONFIGS / "cola.jsonnet"), params_overrides=overrides)
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["0", "1"], "labels")
    model = Model.from_params(vocab=vocab, params=params["model"])
    assert isinstance(model, GlueClassifier)
    # The encoder reads one 16-dimensional mix; the pooler sees 2 x 8 BiLSTM units and the other mix.
    assert model._encoder.get_input_dim() == 16 and model._pooler.projection.in_features == 16 + 16


def test_a_batch_without_the_tasks_sentences_is_a_configuration_error():
    """A batch read for another task (CoLA's "tokens", to an RTE model) is refused by the field's name."""
    reader = DatasetReader.from_params(Params.from_file(str(CONFIGS / "cola.jsonnet"))["dataset_reader"])
    instance = reader.text_to_instance("The cat sleeps .")
    reader.apply_token_indexers(instance)
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["entailment", "not_entailment"], "labels")
    model = Model.from_params(vocab=vocab, params=Params.from_file(str(CONFIGS / "rte.jsonnet"))["model"])
    instance.index_fields(vocab)
    with pytest.raises(ConfigurationError, match="this batch has no 'premise'"):
        model.eval()(**Batch([instance]).as_tensor_dict())


def test_without_an_encoder_the_default_bilstm_reads_the_embedder_with_the_units_asked_for():
    """jiant's 2-layer BiLSTM, its units per direction set alone (the arena's reduced protocol: 256 of 1024)."""
    params = Params.from_file(str(CONFIGS / "cola.jsonnet"))
    model_params = params["model"].as_dict()
    del model_params["encoder"]
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["0", "1"], "labels")
    default = Model.from_params(vocab=vocab, params=Params(copy.deepcopy(model_params)))
    narrow = Model.from_params(
        vocab=vocab, params=Params({**copy.deepcopy(model_params), "encoder_hidden_dim": 5})
    )
    assert (default._encoder.get_input_dim(), default._encoder.get_output_dim()) == (16, 2 * 1024)
    assert (narrow._encoder.get_input_dim(), narrow._encoder.get_output_dim()) == (16, 2 * 5)
    assert narrow._pooler.projection.in_features == 2 * 5 + 16  # with the skipped embedding
