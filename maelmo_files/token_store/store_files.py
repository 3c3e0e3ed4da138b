"""
The files of a token store (`maelmo_plugin/lm/dataset_readers/token_store.py` describes the store), and of a
part of one (`maelmo-prepare --shard K/N`), written as the tokenized blocks come. Numpy only, so that
`maelmo-merge` joins parts without a tokenizer.

    part/
        part.json       the part's record: K and N, the corpus files (path, bytes), the reader settings, the
                        id type and the sizes of the two files below
        ids.bin         the ids of the part's blocks, in corpus order
        lengths.bin     int64: `lengths[0]` ids belong to the document open where the part starts, `lengths[k]`
                        to the k-th document the part opens (0 for one without word-pieces)

Replaying the parts' `(ids, lengths)` in order into one `StoreWriter` gives the unsharded store, bit for bit:
a store depends on the documents only, never on where blocks or parts are cut.
"""

import hashlib
import json
import os
import shutil
from typing import Any

import numpy as np

MANIFEST = "manifest.json"
IDS = "ids.bin"
OFFSETS = "offsets.npy"
FORMAT = 1
COMMAND = (
    "maelmo-prepare"  # whose output a store (merged or not) and a part are, in their owned-output manifest
)
_ENDS = "offsets.partial"  # the documents' ends while a store is written

PART_RECORD = "part.json"
LENGTHS = "lengths.bin"
PART_FORMAT = 1


class StoreWriter:
    """
    Writes a store's `ids.bin` and `offsets.npy` in a directory as the blocks come, holding nothing per
    document: the documents' ends go to a scratch file as they close, which `finish()` turns into the same
    bytes `np.save` writes. A document without word-pieces is left out of the offsets.
    """

    def __init__(self, directory: str) -> None:
        self._directory = directory
        self._ids = open(os.path.join(directory, IDS), "wb")
        self._ends = open(os.path.join(directory, _ENDS), "wb")
        self._num_documents = 0
        self._start = 0  # where the open document starts in ids.bin
        self._open = 0  # its word-pieces so far

    def add(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        """A block's `_block_ids`: each document it opens closes the one before."""
        ids.tofile(self._ids)
        sizes = lengths.copy()
        sizes[0] += self._open
        ends = self._start + np.cumsum(sizes)
        closed = sizes[:-1] > 0
        ends[:-1][closed].tofile(self._ends)
        self._num_documents += int(closed.sum())
        if len(sizes) > 1:
            self._start = int(ends[-2])
        self._open = int(sizes[-1])

    def finish(self) -> tuple[int, int]:
        """Closes the last document and writes `offsets.npy`; `(documents, word-pieces)`."""
        num_tokens = self._start + self._open
        if self._open:
            np.array([num_tokens], dtype=np.int64).tofile(self._ends)
            self._num_documents += 1
        self.close()
        header = {"descr": "<i8", "fortran_order": False, "shape": (self._num_documents + 1,)}
        scratch = os.path.join(self._directory, _ENDS)
        with open(os.path.join(self._directory, OFFSETS), "wb") as out, open(scratch, "rb") as ends:
            np.lib.format.write_array_header_1_0(out, header)
            np.zeros(1, dtype="<i8").tofile(out)
            shutil.copyfileobj(ends, out)
        os.remove(scratch)
        return self._num_documents, num_tokens

    def close(self) -> None:
        self._ids.close()
        self._ends.close()

    def __enter__(self) -> "StoreWriter":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class PartWriter:
    """
    Writes a part's `ids.bin` and `lengths.bin` as its blocks come: a block's `lengths[0]` continues the
    document the block before left open, so the two are added, and the part's lengths are those of one block
    holding all of its text.
    """

    def __init__(self, directory: str) -> None:
        self._ids = open(os.path.join(directory, IDS), "wb")
        self._lengths = open(os.path.join(directory, LENGTHS), "wb")
        self._digests = {IDS: hashlib.sha256(), LENGTHS: hashlib.sha256()}
        self.num_ids = 0
        self.num_lengths = 1  # with the open one
        self._open = 0  # the word-pieces of the document open at the last block's end

    def add(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        self._write(self._ids, IDS, ids)
        self.num_ids += len(ids)
        if len(lengths) > 1:
            self._write(self._lengths, LENGTHS, np.concatenate([[self._open + lengths[0]], lengths[1:-1]]))
            self.num_lengths += len(lengths) - 1
            self._open = int(lengths[-1])
        else:
            self._open += int(lengths[0])

    def finish(self) -> None:
        self._write(self._lengths, LENGTHS, np.array([self._open]))
        self.close()

    def sha256(self) -> dict[str, str]:
        """Of the part's two files, for its record: the merge refuses a part changed since."""
        return {name: digest.hexdigest() for name, digest in self._digests.items()}

    def _write(self, stream: Any, name: str, array: np.ndarray) -> None:
        data = array.astype("<i8" if name == LENGTHS else array.dtype).tobytes()
        stream.write(data)
        self._digests[name].update(data)

    def close(self) -> None:
        self._ids.close()
        self._lengths.close()

    def __enter__(self) -> "PartWriter":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def describe_file(path: str) -> dict[str, Any]:
    """A corpus file as a store's manifest records it: absolute path, bytes, sha256."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return {"path": os.path.abspath(path), "bytes": os.path.getsize(path), "sha256": digest.hexdigest()}


def write_json(path: str, record: dict[str, Any]) -> None:
    """A store's manifest or a part's record, in the one layout both are compared in."""
    with open(path, "w", encoding="utf-8") as out:
        json.dump(record, out, indent=2)
