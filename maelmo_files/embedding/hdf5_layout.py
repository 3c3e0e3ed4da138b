"""
The HDF5 layout of `allennlp maelmo-embed`'s files, AllenNLP 1.x's `allennlp elmo` layout: one dataset per
line, named by its 0-based line index, with the line's `tokens` as an attribute, and `sentence_to_index`,
one string: the JSON mapping {sentence: its dataset's name}. A batch file of the partial output holds the
datasets of one batch and, written last, the attribute `sentences` (its count), which says it is complete.
"""

import json
import os
from collections.abc import Iterable
from typing import Optional

import h5py
import numpy as np

# The HDF5 1.8 file format, readable by HDF5 1.8 (2008) and later: its dense attribute storage lifts the 64 KiB
# limit of an object header, so a `tokens` attribute holds the word-pieces of a line of any length.
LIBVER = ("v108", "v108")
SENTENCE_TO_INDEX = "sentence_to_index"


def write_batch_file(path: str, lines: Iterable[tuple[int, np.ndarray, list[str]]]) -> int:
    """
    Writes a batch's `(line index, vectors, tokens)` to `path` as datasets named by line, each with its
    tokens, and returns their number. The file appears under `path` only complete: it is written under a
    name of this process's own (two processes never write one temporary file) and renamed.
    """
    temporary = f"{path}.{os.getpid()}.tmp"
    count = 0
    with h5py.File(temporary, "w", libver=LIBVER) as batch:
        for index, vectors, tokens in lines:
            dataset = batch.create_dataset(str(index), data=vectors)
            dataset.attrs.create("tokens", tokens, dtype=h5py.string_dtype())
            count += 1
        batch.attrs["sentences"] = count  # written last: checked on resume
    os.replace(temporary, path)
    return count


def copy_line_datasets(path: str, output: h5py.File) -> int:
    """Copies the line datasets of the HDF5 file at `path` (all but `sentence_to_index`) into `output`."""
    count = 0
    with h5py.File(path, "r") as source:
        for dataset in source:
            if dataset != SENTENCE_TO_INDEX:
                # The low-level copy: a third of `Group.copy`'s time per dataset.
                name_bytes = dataset.encode("utf-8")
                h5py.h5o.copy(source.id, name_bytes, output.id, name_bytes)
                count += 1
    return count


def read_sentence_to_index(source: h5py.File) -> dict[str, str]:
    return json.loads(source[SENTENCE_TO_INDEX][0])


def write_sentence_to_index(output: h5py.File, sentence_to_index: dict[str, str]) -> None:
    """The dataset `allennlp elmo` writes: one string, the JSON mapping {sentence: its dataset's name}."""
    index = output.create_dataset(SENTENCE_TO_INDEX, (1,), dtype=h5py.string_dtype())
    index[0] = json.dumps(sentence_to_index)


def complete_batch_count(path: str) -> Optional[int]:
    """The number of sentences of the batch file at `path`, or None if it is not complete."""
    try:
        with h5py.File(path, "r") as batch:
            count = int(batch.attrs["sentences"])
            return count if count == len(batch) else None
    except (OSError, KeyError):
        return None
