from collections.abc import Iterator
from typing import Any, Optional, Union

import numpy as np
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.common.util import JsonDict, sanitize
from allennlp.data import DatasetReader, Instance
from allennlp.models import Model
from allennlp.modules import ScalarMix
from allennlp.predictors.predictor import Predictor

# POOLING: "first" and "mean" give one vector per word, "sentence" one per sentence (the choices of --pool).
from maelmo_declarations.options import POOLING
from maelmo_plugin.lm.modules.recurrence import resolve_precision
from maelmo_plugin.lm.predictors.sentences import SentencePredictor, sentence_of


@Predictor.register("maelmo_representations")
class RepresentationsPredictor(SentencePredictor):
    """
    The contextual vectors of a Masked ELMo (`maelmo_masked_elmo_lm`) or ELMo-LM (`maelmo_elmo_lm`) archive
    for each input sentence: all L + 1 layers h_0 ... h_L, one layer, or their ELMo scalar mix, per
    word-piece or pooled back to the input words.

        allennlp predict model.tar.gz sentences.jsonl --predictor maelmo_representations \
            --predictor-args '{"layer": 2, "pool": "mean"}' --output-file vectors.jsonl \
            --batch-size 32 --silent --include-package maelmo_plugin

    Input lines are `{"sentence": "The cat sleeps."}` or `{"tokens": ["The", "cat", "sleeps."]}`. Each
    sentence is read as `[CLS] ... [SEP]`, the layout of a one-sentence paragraph in pre-training, from zero
    LSTM states with nothing masked (see `SentencePredictor`). Output lines hold `wordpieces` (with [CLS]
    and [SEP]), `words`, `alignment` (word i -> its positions in `wordpieces`) and `vectors`:

    * unpooled, one vector per word-piece, [CLS] (position 0) and [SEP] (the last) included, since the
      model reads them too: shape (L + 1, len(wordpieces), dim), or (len(wordpieces), dim) with `layer`;
    * pooled, one vector per word, [CLS] and [SEP] left out: (L + 1, len(words), dim) or (len(words), dim);
    * with `pool="sentence"`, one vector per sentence: the mean over every word-piece, [CLS] and [SEP]
      included, as sentence-transformers' mean pooling over the attention mask computes it (so that an
      export's `SentenceTransformer` gives the plugin's vectors): (L + 1, dim), or (dim,) with `layer`.

    Memory grows linearly with the length: a document of 20,000 word-pieces embeds in one call
    (docs/performance.md).

    Registered as a `Predictor` with name "maelmo_representations".

    # Parameters

    model : `Model`
    dataset_reader : `DatasetReader`
        The archive's `maelmo_mlm_corpus` reader, whose tokenizer splits the sentences.
    layer : `Union[int, str]`, optional (default = `None`)
        `None`: all L + 1 layers; an `int`: that layer (0 is the word-piece embedding, negative counts from
        the top, so -1 is h_L); `"mix"`: the scalar mix `sum_j softmax(s)_j h_j` (gamma = 1).
    scalar_mix_parameters : `List[float]`, optional (default = `None`)
        The s_j of `"mix"` (before the softmax, as `maelmo_masked_elmo_embedder`'s), one per layer; `None` gives equal
        weights. Giving them implies `"layer": "mix"`.
    pool : `str`, optional (default = `None`)
        `"first"` (the first word-piece of each word, as BERT's NER does) or `"mean"` (their average), one
        vector per word; `"sentence"`, the mean over all word-pieces; `None` returns one vector per
        word-piece.
    frozen : `bool`, optional (default = `True`)
    precision : `str`, optional (default = `"fp32"`)
        The precision of the encoder's matrix products: `"fp32"`; `"int8"` (dynamic quantization) or
        `"bf16"`, for a Masked ELMo archive on a CPU; `"auto"`, `"int8"` (the faster on every CPU measured),
        or `"fp32"` where neither is available (`lm/modules/recurrence/reduced_precision.py`; their error
        against fp32 and their speed are in docs/performance.md).

    NOTE: with `"int8"`, a sentence's vectors differ slightly with the other sentences of its batch (the
    inputs of a product are quantized with one scale per batch), within the tolerance documented in
    `tests/lm/modules/recurrence/reduced_precision_test.py`; with `"fp32"` and `"bf16"` only by float rounding.
    """

    def __init__(
        self,
        model: Model,
        dataset_reader: DatasetReader,
        layer: Optional[Union[int, str]] = None,
        scalar_mix_parameters: Optional[list[float]] = None,
        pool: Optional[str] = None,
        frozen: bool = True,
        precision: str = "fp32",
    ) -> None:
        super().__init__(model, dataset_reader, frozen)
        num_layers = self._lm.num_representation_layers()
        if scalar_mix_parameters is not None and layer is None:
            layer = "mix"
        if not (layer in (None, "mix") or (type(layer) is int and -num_layers <= layer < num_layers)):
            raise ConfigurationError(
                f'layer must be null (all layers), "mix", or an integer from {-num_layers} to '
                f"{num_layers - 1} (the model has L + 1 = {num_layers} layers), got {layer!r}."
            )
        if scalar_mix_parameters is not None and (layer != "mix" or len(scalar_mix_parameters) != num_layers):
            raise ConfigurationError(
                f'scalar_mix_parameters go with "layer": "mix" and need one value per layer '
                f"({num_layers}); got layer {layer!r} and {len(scalar_mix_parameters)} values."
            )
        if pool not in (None, *POOLING):
            raise ConfigurationError(f'pool must be null, "first", "mean" or "sentence", got {pool!r}.')
        self._layer = layer
        self._mix_parameters = scalar_mix_parameters
        self._mix = ScalarMix(num_layers, initial_scalar_parameters=scalar_mix_parameters, trainable=False)  # type: ignore[arg-type]  # why: allennlp defaults initial_scalar_parameters to None but annotates it List[float]
        self._pool = pool
        self._precision = resolve_precision(precision, self._lm.reduced_precision_refusal())

    @property
    def pools(self) -> bool:
        """Whether the vectors are per word (pooled) rather than per word-piece or per sentence."""
        return self._pool in ("first", "mean")

    def predict_batch_instance(self, instances: list[Instance]) -> list[JsonDict]:
        outputs = []
        for instance, vectors in zip(instances, self.vectors(instances)):
            sentence = sentence_of(instance)
            outputs.append(
                {
                    "wordpieces": sentence.wordpieces,
                    "words": sentence.words,
                    "alignment": sentence.alignment,
                    "vectors": vectors,
                }
            )
        return sanitize(outputs)

    @property
    def precision(self) -> str:
        """The precision the products run in: "fp32", "int8" or "bf16" ("auto" resolved)."""
        return self._precision

    @property
    def settings(self) -> dict[str, Any]:
        """What decides the vectors besides the model and the batches: layer, mix, pool and precision."""
        return {
            "layer": self._layer,
            "scalar_mix_parameters": self._mix_parameters,
            "pool": self._pool,
            "precision": self._precision,
        }

    def batched_vectors(self, instances: list[Instance], batch_size: int) -> Iterator[tuple[int, np.ndarray]]:
        """
        The vectors of `instances` (as `vectors` gives them), computed `batch_size` at a time in order of
        decreasing length, so that each batch holds sentences of about the same length and little padding
        is computed. Yields `(index in instances, vectors)` batch by batch, in that order: collect them by
        index to get the input order back.
        """
        for numbers in self.length_batches(instances, batch_size):
            yield from zip(numbers, self.vectors([instances[number] for number in numbers]))

    @staticmethod
    def length_batches(instances: list[Instance], batch_size: int) -> list[list[int]]:
        """The batches of `batched_vectors`: indices into `instances`, `batch_size` at a time, longest first."""
        lengths = [len(sentence_of(instance).ids) for instance in instances]
        # Stable: sentences of the same length keep their input order.
        order = sorted(range(len(instances)), key=lambda number: -lengths[number])
        return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]

    def vector_shape(self, instance: Instance) -> tuple[int, ...]:
        """The shape `vectors` gives `instance`, without computing it."""
        sentence = sentence_of(instance)
        layers = (self._lm.num_representation_layers(),) if self._layer is None else ()
        if self._pool == "sentence":
            positions: tuple[int, ...] = ()
        else:
            positions = (len(sentence.words) if self.pools else len(sentence.ids),)
        return (*layers, *positions, self._lm.representation_dim())

    def listed_tokens(self, instance: Instance) -> list[str]:
        """What a vector file lists as `instance`'s tokens: its words when pooled into words, else its word-pieces."""
        sentence = sentence_of(instance)
        return sentence.words if self.pools else sentence.wordpieces

    def vectors(self, instances: list[Instance]) -> list[np.ndarray]:
        """The vectors of each instance (of `sentence_instances`), with the shapes of the class docstring."""
        layers = self._layers(instances, self._precision)
        if self._layer is None:
            # Shape: (L + 1, batch_size, num_tokens, dim)
            selected = torch.stack(layers)
        else:
            # Shape: (batch_size, num_tokens, dim): one layer, or "mix"
            one = (
                layers[self._layer]
                if isinstance(self._layer, int)
                else self._mix.to(layers[0].device)(layers)
            )
            selected = one.unsqueeze(0)
        result = []
        for row, instance in enumerate(instances):
            sentence = sentence_of(instance)
            # Shape: (L + 1 or 1, len(wordpieces), dim)
            vectors = selected[:, row, : len(sentence.ids)]
            if self._pool is not None:
                # Shape: (L + 1 or 1, len(words), dim), or (L + 1 or 1, dim) for "sentence"
                vectors = _pooled(vectors, sentence.alignment, self._pool)
            result.append((vectors if self._layer is None else vectors[0]).cpu().numpy())
        return result


def _pooled(vectors: torch.Tensor, alignment: list[list[int]], pool: str) -> torch.Tensor:
    """
    (layers, num_pieces, dim) -> (layers, len(words), dim): each word's first piece ("first") or the mean
    of its pieces ("mean"); or -> (layers, dim), the mean of all pieces ("sentence"). Gathers and sums
    rather than a (words x pieces) averaging matrix, which for a document of 20,000 pieces would be 1.4 GB
    and 270 GFLOP of products with zeros.
    """
    if pool == "sentence":
        return vectors.mean(dim=1)
    if pool == "first":
        return vectors[:, [positions[0] for positions in alignment]]
    pieces = torch.tensor([position for positions in alignment for position in positions])
    words = torch.tensor([word for word, positions in enumerate(alignment) for _ in positions])
    counts = torch.tensor([len(positions) for positions in alignment], dtype=vectors.dtype)
    sums = vectors.new_zeros(vectors.size(0), len(alignment), vectors.size(2))
    sums.index_add_(1, words.to(vectors.device), vectors[:, pieces.to(vectors.device)])
    return sums / counts.to(vectors.device).unsqueeze(1)
