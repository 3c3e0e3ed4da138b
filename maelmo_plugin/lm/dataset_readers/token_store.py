"""
A corpus tokenized once: the word-piece ids of every document, memory-mapped, with where each document starts,
and a manifest that says what was tokenized with what. nanoGPT's `prepare.py` pattern: the store owns the ids,
the `maelmo_btbptt` loader owns the order, the windows and the sharding.

    store/
        manifest.json   the format, the corpus files (path, bytes, sha256), the vocabulary (entries' sha256),
                        the reader settings that change ids, the counts and the id type
        ids.bin         every document's ids in corpus order ([CLS] s1 [SEP] s2 [SEP] ... per paragraph):
                        uint16 for vocabularies under 65,536 entries (half the size of int32), else int32
        offsets.npy     int64, one more entry than documents: document d is ids[offsets[d] : offsets[d + 1]]

`allennlp maelmo-prepare` writes a store; a config names it as its data path, and every run and every worker
opens it in milliseconds, where a text corpus is tokenized again by each of them.
"""

import hashlib
import itertools
import json
import logging
import multiprocessing
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any, Optional, Union

import numpy as np
from allennlp.common.checks import ConfigurationError
from allennlp.common.tqdm import Tqdm

from maelmo_declarations import owned_outputs
from maelmo_declarations.refusals import Refusal, check_writable_directory
from maelmo_plugin.common.integrity import file_sha256
from maelmo_plugin.lm.dataset_readers.corpus_files import expand_paths

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
IDS = "ids.bin"
OFFSETS = "offsets.npy"
FORMAT = 1
COMMAND = "maelmo-prepare"  # whose output a store is, in its manifest: also when a run caches one


def is_store(path: Any) -> bool:
    return isinstance(path, (str, os.PathLike)) and os.path.isfile(os.path.join(path, MANIFEST))


class TokenStore:
    """A store on disk (see the module docstring), opened read-only."""

    def __init__(self, directory: str) -> None:
        self.directory = str(directory)
        with open(os.path.join(self.directory, MANIFEST), encoding="utf-8") as manifest:
            self.manifest: dict[str, Any] = json.load(manifest)
        if self.manifest.get("format") != FORMAT:
            raise Refusal(
                f"{self.directory} is a token store of format {self.manifest.get('format')}; this version "
                f"reads format {FORMAT}. Prepare it again with `allennlp maelmo-prepare`."
            )
        self.dtype = np.dtype(self.manifest["dtype"])
        self.offsets = np.load(os.path.join(self.directory, OFFSETS))
        self.num_tokens = int(self.offsets[-1])
        self.num_documents = len(self.offsets) - 1

    def ids(self) -> np.memmap:
        path = os.path.join(self.directory, IDS)
        return np.memmap(path, dtype=self.dtype, mode="r", shape=(self.num_tokens,))

    def stream(self, order: Sequence[int]) -> "EpochStream":
        """The documents laid end to end in `order`, read in place."""
        return EpochStream(self.ids(), self.offsets, order)

    def mismatch(self, reader: Any) -> Optional[str]:
        """
        What makes the store wrong for `reader`, or `None`: a vocabulary or id-changing setting that is not
        the reader's (its ids would mean other word-pieces), or corpus files whose size changed since it was
        prepared (a stale store). A file that is gone is not a change: a store travels without its text.
        Sizes only, since hashing a large corpus would cost every run the time the store saves; the manifest
        keeps the hashes for a full check.
        """
        settings = [
            f"{name}: the store has {self.manifest['reader'].get(name)!r}, the config {value!r}"
            for name, value in reader_settings(reader).items()
            if self.manifest["reader"].get(name) != value
        ]
        if settings:
            return (
                f"The token store {self.directory} was prepared with other settings than the dataset reader's "
                f"({'; '.join(settings)}). Its ids would mean other word-pieces. Point the config at the "
                f"vocabulary the store was made with, {self.manifest['reader'].get('vocabulary')}, or prepare "
                f"the corpus again with this one"
            )
        changed = [
            f"{entry['path']} ({entry['bytes']} bytes when prepared, {os.path.getsize(entry['path'])} now)"
            for entry in self.manifest["corpus"]
            if os.path.isfile(entry["path"]) and os.path.getsize(entry["path"]) != entry["bytes"]
        ]
        if changed:
            return (
                f"The corpus of the token store {self.directory} has changed since it was prepared: "
                f"{'; '.join(changed)}. Prepare it again"
            )
        return None

    def corpus_paths(self) -> list[str]:
        return [entry["path"] for entry in self.manifest["corpus"]]

    @classmethod
    def prepare(
        cls,
        reader: Any,
        corpus: Union[str, Sequence[str]],
        directory: str,
        force: bool = False,
        quiet: bool = False,
        processes: int = 1,
    ) -> "TokenStore":
        """
        Tokenizes `corpus` with `reader` (a `maelmo_mlm_corpus`) into a store at `directory`, with `processes`
        processes (the store is the same for any number). The store appears whole or not at all: it is
        written aside and renamed, so a crash leaves no half store to be taken for a good one; an existing
        store (replaced only with `force`) stays as it was until the new one is complete.
        """
        previous = check_store_output(directory, force, corpus, reader.tokenizer.vocab)
        parent = os.path.dirname(os.path.abspath(directory))
        check_writable_directory(parent, "--output-dir's parent")
        os.makedirs(parent, exist_ok=True)
        work = tempfile.mkdtemp(prefix=".maelmo_store_", dir=parent)
        try:
            dtype = np.uint16 if len(reader.tokenizer.hf_tokenizer) <= 65536 else np.int32
            pieces = reader.document_pieces(corpus)
            offsets = _write_ids(
                tokenize_pieces(reader, pieces, dtype, processes, quiet), os.path.join(work, IDS)
            )
            if offsets[-1] == 0:
                raise Refusal(f"The corpus {corpus} has no word-pieces.")
            np.save(os.path.join(work, OFFSETS), offsets)
            manifest = {
                "format": FORMAT,
                "dtype": np.dtype(dtype).name,
                "num_documents": len(offsets) - 1,
                "num_tokens": int(offsets[-1]),
                "corpus": [_describe_file(path) for path in expand_paths(corpus)],
                "reader": reader_settings(reader),
            }
            with open(os.path.join(work, MANIFEST), "w", encoding="utf-8") as out:
                json.dump(manifest, out, indent=2)
            # The rule of every writing command: replaces only a previous store, and of it only what it wrote.
            previous = check_store_output(directory, force, corpus, reader.tokenizer.vocab)
            owned_outputs.move_into_place(work, directory, COMMAND, previous)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        logger.info(
            "Token store %s: %d documents, %d word-pieces (%s).",
            directory,
            manifest["num_documents"],
            manifest["num_tokens"],
            manifest["dtype"],
        )
        return cls(directory)


def check_store_output(directory: str, force: bool, corpus: Any, vocabulary: Any) -> Optional[dict[str, Any]]:
    """
    What may be written at `directory` (`maelmo_declarations/owned_outputs.py`): a new path, an empty folder, or with
    `force` a previous store; never a folder of the user's, nor one holding the corpus or the vocabulary. Returns
    the previous store's manifest, or None.
    """
    inputs = [str(vocabulary)] if isinstance(vocabulary, (str, os.PathLike)) else []
    patterns = (
        str(corpus).split(",") if isinstance(corpus, (str, os.PathLike)) else [str(path) for path in corpus]
    )
    inputs += [os.path.expanduser(pattern.strip()) for pattern in patterns]  # a folder given is an input too
    try:
        inputs += expand_paths(corpus)
    except (ConfigurationError, FileNotFoundError):
        pass  # a corpus that cannot be read is refused when it is read, naming it
    return owned_outputs.check_output(directory, COMMAND, force, inputs, option="--output-dir")


def reader_settings(reader: Any) -> dict[str, Any]:
    """What decides the ids of a corpus besides its text: the vocabulary, casing and document boundaries."""
    tokenizer = reader.tokenizer.hf_tokenizer
    entries = sorted(tokenizer.get_vocab().items(), key=lambda entry: entry[1])
    fingerprint = hashlib.sha256("\n".join(token for token, _ in entries).encode("utf-8")).hexdigest()
    return {
        "vocabulary": reader.tokenizer.vocab,
        "vocabulary_sha256": fingerprint,
        # Lower-casing and accent stripping live in the normalizer.
        "normalizer": json.loads(tokenizer.backend_tokenizer.to_str())["normalizer"],
        "document_start_pattern": reader.document_start_pattern,
    }


def tokenize_pieces(
    reader: Any, pieces: list[tuple[int, Any]], dtype: Any, processes: int, quiet: bool
) -> Iterator[tuple[int, np.ndarray]]:
    """
    `(document_index, ids)` of every piece of `reader.document_pieces()`, in corpus order, tokenized by
    `processes` processes (a pool's ordered `imap`, so the order never depends on which finishes first).
    """
    progress = None
    if not quiet:
        corpus_bytes = sum(piece.end - piece.start for _, piece in pieces)
        progress = Tqdm.tqdm(total=corpus_bytes, desc="tokenizing the corpus", unit="B", unit_scale=True)
    if processes <= 1:
        results: Iterator[np.ndarray] = (_piece_ids(reader, piece, dtype) for _, piece in pieces)
        pool = None
    else:
        # Forked workers inherit the reader (spaCy pipeline, tokenizer) instead of unpickling it; each worker
        # then tokenizes on one thread, so that N processes use N cores and no more.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        pool = context.Pool(processes, initializer=_set_worker_reader, initargs=(reader, dtype))
        results = pool.imap(_worker_piece_ids, [piece for _, piece in pieces], chunksize=4)
    try:
        for (document, piece), ids in zip(pieces, results):
            if progress is not None:
                progress.update(piece.end - piece.start)
            yield document, ids
    finally:
        if pool is not None:
            pool.terminate()
        if progress is not None:
            progress.close()


def _piece_ids(reader: Any, piece: Any, dtype: Any) -> np.ndarray:
    return np.fromiter(itertools.chain.from_iterable(reader.piece_ids(piece)), dtype=dtype)


_WORKER: dict[str, Any] = {}


def _set_worker_reader(reader: Any, dtype: Any) -> None:
    _WORKER.update(reader=reader, dtype=dtype)


def _worker_piece_ids(piece: Any) -> np.ndarray:
    return _piece_ids(_WORKER["reader"], piece, _WORKER["dtype"])


def _write_ids(pieces: Iterator[tuple[int, np.ndarray]], path: str) -> np.ndarray:
    ends: list[int] = []
    position, previous = 0, None
    with open(path, "wb") as out:
        for document, ids in pieces:
            if not len(ids):
                continue
            if previous is not None and document != previous:
                ends.append(position)
            previous = document
            ids.tofile(out)
            position += len(ids)
    if previous is not None:
        ends.append(position)
    return np.asarray([0] + ends, dtype=np.int64)


def _describe_file(path: str) -> dict[str, Any]:
    return {"path": os.path.abspath(path), "bytes": os.path.getsize(path), "sha256": file_sha256(path)}


class EpochStream:
    """
    A store's documents laid end to end in an epoch's order, read by position without being written out:
    `read(start, stop)` finds the documents that cover `[start, stop)` by binary search in the order's
    cumulative lengths, and joins their slices of the memory-mapped ids. Opening one costs O(documents), not
    O(word-pieces), so an epoch starts in the same time whatever the corpus's size.
    """

    def __init__(self, ids: np.ndarray, offsets: np.ndarray, order: Sequence[int]) -> None:
        order_array = np.asarray(order, dtype=np.int64)
        self._ids = ids
        self._starts = offsets[order_array]
        # Where each document of the order ends in the stream.
        self._ends = np.cumsum(offsets[order_array + 1] - self._starts)
        self.length = int(self._ends[-1]) if len(order_array) else 0

    def read(self, start: int, stop: int) -> np.ndarray:
        """The word-piece ids at stream positions `[start, stop)`, `0 <= start <= stop <= length`."""
        pieces = []
        document = int(np.searchsorted(self._ends, start, side="right"))
        while start < stop:
            begins_at = int(self._ends[document - 1]) if document else 0
            end = min(stop, int(self._ends[document]))
            offset = int(self._starts[document]) - begins_at
            pieces.append(self._ids[offset + start : offset + end])
            start, document = end, document + 1
        return np.concatenate(pieces) if pieces else np.zeros(0, dtype=self._ids.dtype)
