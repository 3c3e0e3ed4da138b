"""
A small Python API over a pre-trained archive, for users who are not writing AllenNLP configs:

    from maelmo_plugin.api import MaskedElmo

    elmo = MaskedElmo.from_archive("model.tar.gz")
    vectors = elmo.embed(["The cat sleeps.", "A dog eats a fish."], layer="mix", pool="mean")
    vectors[0].shape                                   # (4, dim): The, cat, sleeps, .
    elmo.embed(["The cat sleeps."], layer=-1, pool="sentence")[0].shape     # (dim,): one per sentence
    elmo.fill_mask("The cat [MASK] on the house.", top_k=3)

It is a thin layer over the `maelmo_representations` and `maelmo_fill_mask` predictors: same input
handling, same outputs, same errors.
"""

from typing import Optional, Union

import numpy as np
from allennlp.common.util import JsonDict
from allennlp.models.archival import Archive

from maelmo_plugin.lm.loading import load_language_model_archive
from maelmo_plugin.lm.predictors.fill_mask import FillMaskPredictor
from maelmo_plugin.lm.predictors.representations import RepresentationsPredictor


class MaskedElmo:
    """
    A loaded Masked ELMo (`maelmo_masked_elmo_lm`) or ELMo-LM (`maelmo_elmo_lm`) archive.

    # Parameters

    archive : `Archive`
        From `allennlp.models.archival.load_archive`; `MaskedElmo.from_archive(path)` loads one.
    """

    def __init__(self, archive: Archive) -> None:
        self._model = archive.model
        self._reader = archive.validation_dataset_reader
        # Built here so that a wrong archive fails at loading, not at the first call.
        RepresentationsPredictor(self._model, self._reader)

    @classmethod
    def from_archive(cls, path: str, cuda_device: int = -1) -> "MaskedElmo":
        """`path`: a `model.tar.gz` (or its serialization directory), or a Hugging Face export directory."""
        return cls(load_language_model_archive(path, cuda_device))

    def embed(
        self,
        sentences: list[str],
        layer: Optional[Union[int, str]] = None,
        pool: Optional[str] = None,
        batch_size: int = 32,
        scalar_mix_parameters: Optional[list[float]] = None,
        precision: str = "fp32",
    ) -> list[np.ndarray]:
        """
        The vectors of each sentence, as the `maelmo_representations` predictor gives them: shape
        (L + 1, num_tokens, dim) with `layer=None`, (num_tokens, dim) with an `int` layer or `"mix"`; the
        tokens are the word-pieces with [CLS] and [SEP], or the words with `pool="first"` / `"mean"`.
        `pool="sentence"` gives one vector per sentence, the mean over its word-pieces ([CLS] and [SEP]
        included): (L + 1, dim), or (dim,) with a layer. With `layer=-1` it is what a `maelmo-export
        --sentence-transformers` directory's `SentenceTransformer.encode` returns (docs/sentence_vectors.md).
        A sentence may be a whole document: there is no length limit, and memory grows linearly with it.
        The sentences run `batch_size` at a time in order of length (the result is in the input order);
        `precision` is the predictor's: "fp32", "int8", "bf16" or "auto".
        """
        if isinstance(sentences, str) or not isinstance(sentences, list):
            raise ValueError(
                f"sentences must be a list of strings, got {type(sentences).__name__}: {sentences!r:.80}"
            )
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
        predictor = RepresentationsPredictor(
            self._model,
            self._reader,
            layer=layer,
            scalar_mix_parameters=scalar_mix_parameters,
            pool=pool,
            precision=precision,
        )
        for number, sentence in enumerate(sentences):
            if not isinstance(sentence, str):
                raise ValueError(f"sentences[{number}] must be a string, got {sentence!r:.80}.")
        names = [f"sentences[{number}]" for number in range(len(sentences))]
        instances = predictor.sentence_instances(sentences, names)
        vectors: list[np.ndarray] = [np.empty(0)] * len(sentences)
        for number, sentence_vectors in predictor.batched_vectors(instances, batch_size):
            vectors[number] = sentence_vectors
        return vectors

    def embed_file(
        self,
        input_file: str,
        output_file: str,
        layer: Optional[Union[int, str]] = None,
        pool: Optional[str] = None,
        batch_size: int = 64,
        precision: str = "fp32",
        processes: int = 1,
        shard: Optional[str] = None,
        force: bool = False,
        storage: str = "float32",
    ) -> int:
        """
        The vectors of every line of `input_file` written to `output_file` (HDF5), as `maelmo-embed` writes
        them, with its options (`shard`: "K/N"; `storage`: "float32" or "float16"); returns the number of
        sentences. The output's size is logged before any vector is computed, and a disk that cannot hold it
        is refused. It is the command's job
        (`maelmo_plugin.embedding.embed_file`): a run stopped here continues from its `OUTPUT.partial/`, from
        Python or by the command line with the same options, to the same file.
        """
        from maelmo_declarations.shards import Shard
        from maelmo_plugin.embedding import embed_file

        predictor = RepresentationsPredictor(
            self._model, self._reader, layer=layer, pool=pool, precision=precision
        )
        part = None if shard is None else Shard.parse(shard)
        return embed_file(predictor, input_file, output_file, batch_size, force, processes, part, storage)

    def fill_mask(self, sentence: str, top_k: int = 5) -> JsonDict:
        """
        The `top_k` word-pieces and probabilities at each [MASK] of `sentence` (Masked ELMo archives only),
        as the `maelmo_fill_mask` predictor gives them: `{"wordpieces": [...], "masks": [{"position": ...,
        "wordpieces": [...], "probabilities": [...]}, ...]}`.
        """
        if not isinstance(sentence, str):
            raise ValueError(f"sentence must be a string, got {sentence!r:.80}.")
        predictor = FillMaskPredictor(self._model, self._reader, top_k=top_k)
        return predictor.predict_batch_instance(predictor.sentence_instances([sentence], ["sentence"]))[0]
