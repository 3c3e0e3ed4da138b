"""
Sentence vectors from `maelmo-export --format onnx`'s directory, with ONNX Runtime and the `tokenizers` library
only (no torch model): the runner behind the Ray backend (`maelmo_plugin/embedding/ray_data.py`). It does
what docs/onnx.md's standalone script shows: tokenize, pad each batch to its longest row (right-padded, as the
export needs), run, and average one layer (or the mean of all) over each sentence's word-pieces.
"""

import os
from typing import Optional, Union

import numpy as np


def check_onnx_directory(directory: str, onnx_file: str = "model.onnx") -> None:
    """A `ValueError` naming the file when `directory` lacks the model or the tokenizer the runner reads."""
    for name in (onnx_file, "tokenizer.json"):
        if not os.path.isfile(os.path.join(directory, name)):
            raise ValueError(
                f"{directory} has no {name}, which the ONNX runner reads: give the whole directory that "
                f"maelmo-export --format onnx wrote."
            )


class OnnxSentenceVectors:
    """
    # Parameters

    directory : `str`
        What `maelmo-export --format onnx` wrote: `onnx_file` and `tokenizer.json`.
    onnx_file : `str`
        `model.onnx`, or `model_int8.onnx` for int8 products.
    threads : `int`, optional (default = `None`)
        ONNX Runtime's intra-op threads; None keeps its default.
    """

    def __init__(self, directory: str, onnx_file: str = "model.onnx", threads: Optional[int] = None) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        check_onnx_directory(directory, onnx_file)
        options = onnxruntime.SessionOptions()
        if threads is not None:
            options.intra_op_num_threads = threads
        self._tokenizer = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
        self._tokenizer.no_padding()  # the export pads every batch to its longest: here, each length batch
        self._session = onnxruntime.InferenceSession(
            os.path.join(directory, onnx_file), options, providers=["CPUExecutionProvider"]
        )

    def embed(self, texts: list[str], layer: Union[int, str], batch_size: int) -> np.ndarray:
        """(len(texts), dim) float32: the mean over each text's word-pieces of `layer` (or "mix")."""
        vectors: list[np.ndarray] = [np.empty(0)] * len(texts)
        encodings = self._tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda index: -len(encodings[index].ids))  # little padding
        for start in range(0, len(order), batch_size):
            numbers = order[start : start + batch_size]
            length = max(len(encodings[number].ids) for number in numbers)
            ids = np.zeros((len(numbers), length), dtype=np.int64)
            mask = np.zeros((len(numbers), length), dtype=np.int64)
            for row, number in enumerate(numbers):
                ids[row, : len(encodings[number].ids)] = encodings[number].ids
                mask[row, : len(encodings[number].ids)] = 1
            # Shape: (L + 1, rows, tokens, d), zero at padding.
            hidden = self._session.run(["hidden_states"], {"input_ids": ids, "attention_mask": mask})[0]
            chosen = hidden.mean(axis=0) if layer == "mix" else hidden[layer]
            pooled = chosen.sum(axis=1) / mask.sum(axis=1, keepdims=True)
            for row, number in enumerate(numbers):
                vectors[number] = pooled[row].astype(np.float32)
        return np.stack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)
