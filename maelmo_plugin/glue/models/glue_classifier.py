from typing import Any, Optional

import torch
import torch.nn.functional as F
from allennlp.common.checks import ConfigurationError
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models import Model
from allennlp.modules import Seq2SeqEncoder, TextFieldEmbedder
from allennlp.modules.seq2seq_encoders import LstmSeq2SeqEncoder
from allennlp.nn import InitializerApplicator, util

from maelmo_plugin.glue.metrics import GlueMetric
from maelmo_plugin.glue.modules.glue_heads import AttentionPairEncoder, MaxPooler, mlp_classifier
from maelmo_plugin.glue.tasks import resolve_glue_task


@Model.register("maelmo_glue_classifier")
class GlueClassifier(Model):
    """
    jiant's GLUE target-task model (Wang et al., 2019), the protocol the Masked ELMo paper follows for
    ELMo and Masked ELMo alike (Senay & Salin, 2020, section 4, Table 1):

        embedder (ELMo-style scalar mix) -> dropout -> 2-layer BiLSTM (1024) -> dropout
                                                 -> [output ; skipped (dropped-out) embedding]
        single sentence:  projection -> max pooling -> MLP
        sentence pair:    each sentence as above, or bi-attention + BiLSTM modelling layer -> max pooling,
                          then [u ; v ; |u - v| ; u * v] -> MLP
        MLP:              Linear -> Tanh -> LayerNorm -> Dropout -> Linear

    STS-B is trained as regression on score / 5 (mean squared error); the other tasks with cross-entropy.

    Registered as a `Model` with name "maelmo_glue_classifier".

    # Parameters

    vocab : `Vocabulary`
        Holds the task's labels in `label_namespace`.
    text_field_embedder : `TextFieldEmbedder`
        Usually the `maelmo_masked_elmo_embedder` (Masked ELMo / ELMo LM archives) or AllenNLP's `elmo_token_embedder`.
    task : `str`
        The GLUE task (as for the `maelmo_glue` reader): picks the fields, the loss and the metrics.
    encoder : `Seq2SeqEncoder`, optional (default = jiant's 2-layer BiLSTM with 1024 units per direction)
    encoder_hidden_dim : `int`, optional (default = `1024`, jiant's `d_hid`)
        The units per direction of that default BiLSTM, which reads the embedder's output whatever its size:
        the reduced CPU protocol's 256 (docs/design.md) without restating the embedder's size.
    skip_embedding : `bool`, optional (default = `True`)
        Concatenate the embedding to the encoder's output (jiant's `skip_embs`).
    separate_skip_mix : `bool`, optional (default = `False`)
        The embedder returns two mixes, [encoder input ; skipped] (`num_output_representations: 2`),
        so the skip connection has its own mixing weights (jiant's `sep_embs_for_skip`).
    pair_attention : `bool`, optional (default = `False`)
        Use the bi-attention pair encoder for sentence pairs (Table 1: only the large tasks).
    attention_hidden_dim : `int`, optional (default = `512`)
        Hidden size of the attention's BiLSTM modelling layer (jiant's `d_hid_attn`).
    projection_dim : `int`, optional (default = `512`)
        Projection before max pooling (Table 1's "max pool projection dim").
    classifier_hidden_dim : `int`, optional (default = `512`)
    classifier_dropout : `float`, optional (default = `0.2`)
        Dropout inside the MLP and on the pair attention's output (jiant's `classifier_dropout`).
    dropout : `float`, optional (default = `0.2`)
        Dropout on the embedding (the encoder's input and the skipped copy) and on the encoder's output,
        as jiant's `SentenceEncoder` applies its `dropout`; give the embedder `dropout: 0` (jiant's ELMo
        wrapper has none: "Dropout is added by the sentence encoder later").
    label_namespace : `str`, optional (default = `"labels"`)
        The task's labels are added to it if the data lacked some, so that there is one output per label.
    initializer : `InitializerApplicator`, optional
    """

    default_predictor = "maelmo_glue"

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        task: str,
        encoder: Optional[Seq2SeqEncoder] = None,
        encoder_hidden_dim: int = 1024,
        skip_embedding: bool = True,
        separate_skip_mix: bool = False,
        pair_attention: bool = False,
        attention_hidden_dim: int = 512,
        projection_dim: int = 512,
        classifier_hidden_dim: int = 512,
        classifier_dropout: float = 0.2,
        dropout: float = 0.2,
        label_namespace: str = "labels",
        initializer: Optional[InitializerApplicator] = None,
        **kwargs,
    ) -> None:
        super().__init__(vocab, **kwargs)
        self._task = resolve_glue_task(task)
        self._embedder = text_field_embedder
        self._separate_skip_mix = separate_skip_mix
        self._skip_embedding = skip_embedding
        embedding_dim = text_field_embedder.get_output_dim()
        if separate_skip_mix:
            if embedding_dim % 2:
                raise ConfigurationError("separate_skip_mix needs an embedder with two concatenated mixes")
            embedding_dim //= 2
        self._encoder = encoder or LstmSeq2SeqEncoder(
            embedding_dim, encoder_hidden_dim, num_layers=2, bidirectional=True
        )
        if self._encoder.get_input_dim() != embedding_dim:
            raise ConfigurationError(
                f"The encoder reads {self._encoder.get_input_dim()} dimensions, the embedder gives {embedding_dim}."
            )
        self._dropout = torch.nn.Dropout(dropout)
        sentence_dim = self._encoder.get_output_dim() + (embedding_dim if skip_embedding else 0)
        self._pair_attention = (
            # jiant gives the pair attention the classifier's dropout (params["dropout"] in build_pair_attn).
            AttentionPairEncoder(sentence_dim, attention_hidden_dim, classifier_dropout)
            if pair_attention and self._task.is_pair
            else None
        )
        if self._pair_attention is not None:  # jiant pools the modelling layer's output without projection
            self._pooler = MaxPooler(self._pair_attention.output_dim)
        else:
            self._pooler = MaxPooler(sentence_dim, projection_dim)
        features = self._pooler.output_dim * (4 if self._task.is_pair else 1)
        self._label_namespace = label_namespace
        if not self._task.is_regression:
            # One output per label of the task, even one that the data the vocabulary was built from lacks
            # (the metric expects them all); AllenNLP saves the vocabulary after building the model.
            vocab.add_tokens_to_namespace(list(self._task.labels or ()), label_namespace)
            labels = set(vocab.get_token_to_index_vocabulary(label_namespace))
            if labels != set(self._task.labels or ()):
                raise ConfigurationError(
                    f"The {label_namespace!r} namespace holds {sorted(labels)}; the labels of "
                    f"{self._task.folder} are {list(self._task.labels or ())}."
                )
        num_outputs = 1 if self._task.is_regression else vocab.get_vocab_size(label_namespace)
        self._classifier = mlp_classifier(features, classifier_hidden_dim, num_outputs, classifier_dropout)
        self._metric = GlueMetric.from_vocab(task, vocab, label_namespace)
        if initializer is not None:
            initializer(self)

    def forward(
        self,
        tokens: Optional[TextFieldTensors] = None,
        premise: Optional[TextFieldTensors] = None,
        hypothesis: Optional[TextFieldTensors] = None,
        label: Optional[torch.Tensor] = None,
        metadata: Optional[list[dict[str, Any]]] = None,
    ) -> dict[str, Any]:
        """
        # Parameters

        tokens : `TextFieldTensors`, optional
            The sentence of a single-sentence task (CoLA, SST-2), from the `maelmo_glue` reader.
        premise, hypothesis : `TextFieldTensors`, optional
            The two sentences of a pair task. The task's own fields must be given: a batch that lacks one
            (read for another task) is a `ConfigurationError`.
        label : `torch.Tensor`, optional
            Label indices (batch_size,), or STS-B scores / 5 (batch_size,) or (batch_size, 1).
        metadata : `List[Dict[str, Any]]`, optional
            Passed through (the GLUE `index` of each row, for test-set predictions).

        # Returns

        logits : `torch.Tensor`
            (batch_size, num_labels); for STS-B `score`, (batch_size,), on the 0-1 scale.
        probs : `torch.Tensor`
            (batch_size, num_labels), classification tasks only.
        loss : `torch.Tensor`
            When `label` is given.
        """
        if self._task.is_pair:
            features = self._pair_features(
                self._sentence("premise", premise), self._sentence("hypothesis", hypothesis)
            )
        else:
            features = self._pooler(*self._encode(self._sentence("tokens", tokens)))
        # Shape: (batch_size, num_outputs)
        logits = self._classifier(features)
        # Tensors, and the metadata passed through as it came.
        output: dict[str, Any] = {}
        if self._task.is_regression:
            output["score"] = logits.squeeze(-1)
        else:
            output["logits"] = logits
            output["probs"] = torch.softmax(logits, dim=-1)
        if metadata is not None:
            output["metadata"] = metadata
        if label is not None:
            output["loss"] = self._loss(logits, label)
            self._metric(output["score"] if self._task.is_regression else logits, label.view(-1))
        return output

    def _sentence(self, name: str, text: Optional[TextFieldTensors]) -> TextFieldTensors:
        """The batch's field `name`, one that this model's task reads."""
        if text is None:
            raise ConfigurationError(
                f"The {self._task.name} model reads the field(s) {list(self._task.field_names)}; this batch "
                f"has no {name!r}: read the data with a maelmo_glue reader of the same task."
            )
        return text

    def _encode(self, text: TextFieldTensors) -> tuple[torch.Tensor, torch.BoolTensor]:
        """Shape: (batch_size, num_tokens, sentence_dim), and the mask."""
        mask = util.get_text_field_mask(text)
        # Shape: (batch_size, num_tokens, embedding_dim), or two mixes side by side (separate_skip_mix)
        embedded = self._dropout(self._embedder(text))
        encoder_input, skipped = (
            embedded.chunk(2, dim=-1) if self._separate_skip_mix else (embedded, embedded)
        )
        encoded = self._dropout(self._encoder(encoder_input, mask))
        if self._skip_embedding:
            encoded = torch.cat([encoded, skipped], dim=-1)
        return encoded, mask

    def _pair_features(self, premise: TextFieldTensors, hypothesis: TextFieldTensors) -> torch.Tensor:
        first, first_mask = self._encode(premise)
        second, second_mask = self._encode(hypothesis)
        if self._pair_attention is not None:
            first, second = self._pair_attention(first, first_mask, second, second_mask)
        u, v = self._pooler(first, first_mask), self._pooler(second, second_mask)
        # Shape: (batch_size, 4 x pooled_dim)
        return torch.cat([u, v, (u - v).abs(), u * v], dim=-1)

    def _loss(self, logits: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
        if self._task.is_regression:
            return F.mse_loss(logits.view(-1), label.view(-1).to(logits.dtype))
        return F.cross_entropy(logits, label.long().view(-1))

    def make_output_human_readable(self, output_dict: dict[str, Any]) -> dict[str, Any]:
        if not self._task.is_regression:
            labels = self.vocab.get_index_to_token_vocabulary(self._label_namespace)
            output_dict["label"] = [labels[int(i)] for i in output_dict["probs"].argmax(-1)]
        return output_dict

    def get_metrics(self, reset: bool = False) -> dict[str, float]:
        return self._metric.get_metric(reset)
