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
from maelmo_declarations.shards import Shard
from maelmo_files.token_store.store_files import (
    COMMAND,
    FORMAT,
    IDS,
    MANIFEST,
    OFFSETS,
    PART_FORMAT,
    PART_RECORD,
    PartWriter,
    StoreWriter,
    describe_file,
    write_json,
)
from maelmo_plugin.lm.dataset_readers.corpus_files import expand_paths

logger = logging.getLogger(__name__)

# An epoch's order is looked up in the offsets this many blocks at a time, so that no temporary array the
# size of the order is made beside the two an epoch keeps.
_ORDER_CHUNK = 1 << 16


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
                f"reads format {FORMAT}. Prepare it again with `maelmo maelmo-prepare`."
            )
        self.dtype = np.dtype(self.manifest["dtype"])
        # Memory-mapped: a run reads the offsets of the documents it lays out, and holds none of them.
        self.offsets = np.load(os.path.join(self.directory, OFFSETS), mmap_mode="r")
        self.num_tokens = int(self.offsets[-1])
        self.num_documents = len(self.offsets) - 1
        ids_bytes = os.path.getsize(os.path.join(self.directory, IDS))
        expected = (self.manifest["num_documents"], self.manifest["num_tokens"] * self.dtype.itemsize)
        if (self.num_documents, ids_bytes) != expected:
            raise Refusal(
                f"{self.directory} is not a whole token store: its manifest says {expected[0]} documents and "
                f"{expected[1]} bytes of ids, its files hold {self.num_documents} and {ids_bytes}. "
                f"Prepare it again with `maelmo maelmo-prepare`."
            )

    def ids(self) -> np.memmap:
        path = os.path.join(self.directory, IDS)
        return np.memmap(path, dtype=self.dtype, mode="r", shape=(self.num_tokens,))

    def stream(self, blocks: Union[np.ndarray, Sequence[int]], block_size: int = 1) -> "EpochStream":
        """
        The blocks of `block_size` consecutive documents laid end to end in the order `blocks` (an int64 array
        is used as it is), read in place.
        """
        return EpochStream(self.ids(), self.offsets, blocks, block_size)

    def mismatch(self, reader: Any) -> Optional[str]:
        """
        What makes the store wrong for `reader`, or `None`: a vocabulary or id-changing setting that is not
        the reader's (its ids would be other word-pieces, or other sentences), or corpus files whose size changed since it was
        prepared (a stale store). A file that is gone is not a change: a store travels without its text.
        Sizes only, since hashing a large corpus would cost every run the time the store saves; the manifest
        keeps the hashes for a full check.
        """
        ours = reader_settings(reader)
        theirs = self.manifest["reader"]
        settings = [
            f"{name}: the store has {theirs.get(name)!r}, the config {ours.get(name)!r}"
            for name in [*ours, *(name for name in theirs if name not in ours)]
            if theirs.get(name) != ours.get(name)
        ]
        if settings:
            return (
                f"The token store {self.directory} was prepared with other settings than the dataset reader's "
                f"({'; '.join(settings)}). Its ids are not the ones this config reads the corpus into. Point "
                f"the config at the vocabulary (and sentence splitter) the store was made with, "
                f"{theirs.get('vocabulary')}, or prepare the corpus again with this one"
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
        _write(reader, corpus, directory, force, quiet, processes, None)
        return cls(directory)

    @staticmethod
    def prepare_part(
        reader: Any,
        corpus: Union[str, Sequence[str]],
        directory: str,
        shard: Shard,
        force: bool = False,
        quiet: bool = False,
        processes: int = 1,
    ) -> None:
        """
        `prepare`'s K-th of N parts (`shard`), written as a store is (`maelmo_files/token_store/store_files.py`:
        about 1/N of the corpus's bytes, cut at line starts, a compressed file whole in one part), which
        `maelmo-merge` joins into the store `prepare` writes.
        """
        _write(reader, corpus, directory, force, quiet, processes, shard)


def _write(
    reader: Any,
    corpus: Union[str, Sequence[str]],
    directory: str,
    force: bool,
    quiet: bool,
    processes: int,
    shard: Optional[Shard],
) -> None:
    """The store, or with `shard` its part, at `directory` (see `TokenStore.prepare`)."""
    previous = check_store_output(directory, force, corpus, reader.tokenizer.vocab)
    parent = os.path.dirname(os.path.abspath(directory))
    check_writable_directory(parent, "--output-dir's parent")
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".maelmo_store_", dir=parent)
    try:
        dtype = np.uint16 if len(reader.tokenizer.hf_tokenizer) <= 65536 else np.int32
        # Only a part asks for `shard`: a whole store needs no more of a reader than it always did.
        blocks = (
            reader.document_blocks(corpus) if shard is None else reader.document_blocks(corpus, shard=shard)
        )
        writer = StoreWriter(work) if shard is None else PartWriter(work)
        with writer:
            for ids, lengths in tokenize_blocks(reader, blocks, dtype, processes, quiet):
                writer.add(ids, lengths)
            counts = writer.finish()
        if shard is not None:
            assert isinstance(writer, PartWriter)
            manifest = {
                "format": PART_FORMAT,
                "shard": shard.index,
                "num_shards": shard.count,
                "dtype": np.dtype(dtype).name,
                "num_ids": writer.num_ids,
                "num_lengths": writer.num_lengths,
                "sha256": writer.sha256(),
                "corpus": [
                    {"path": os.path.abspath(path), "bytes": os.path.getsize(path)}
                    for path in expand_paths(corpus)
                ],
                "reader": reader_settings(reader),
            }
            write_json(os.path.join(work, PART_RECORD), manifest)
        else:
            assert counts is not None
            num_documents, num_tokens = counts
            if num_tokens == 0:
                raise Refusal(f"The corpus {corpus} has no word-pieces.")
            manifest = {
                "format": FORMAT,
                "dtype": np.dtype(dtype).name,
                "num_documents": num_documents,
                "num_tokens": num_tokens,
                "corpus": [describe_file(path) for path in expand_paths(corpus)],
                "reader": reader_settings(reader),
            }
            write_json(os.path.join(work, MANIFEST), manifest)
        # The rule of every writing command: replaces only a previous store, and of it only what it wrote.
        previous = check_store_output(directory, force, corpus, reader.tokenizer.vocab)
        owned_outputs.move_into_place(work, directory, COMMAND, previous)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    if shard is not None:
        logger.info("Part %s of a token store: %s, %d word-pieces.", shard, directory, manifest["num_ids"])
        return None
    logger.info(
        "Token store %s: %d documents, %d word-pieces (%s).",
        directory,
        manifest["num_documents"],
        manifest["num_tokens"],
        manifest["dtype"],
    )


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
    """
    What decides the ids of a corpus besides its text: the vocabulary, casing, document boundaries and, when it
    is not the default's, the sentence splitter.
    """
    tokenizer = reader.tokenizer.hf_tokenizer
    entries = sorted(tokenizer.get_vocab().items(), key=lambda entry: entry[1])
    fingerprint = hashlib.sha256("\n".join(token for token, _ in entries).encode("utf-8")).hexdigest()
    settings = {
        "vocabulary": reader.tokenizer.vocab,
        "vocabulary_sha256": fingerprint,
        # Lower-casing and accent stripping live in the normalizer.
        "normalizer": json.loads(tokenizer.backend_tokenizer.to_str())["normalizer"],
        "document_start_pattern": reader.document_start_pattern,
    }
    # Absent for spaCy's rule-based English sentences, so that every store made before the setting still opens.
    if reader.sentence_splitter_setting is not None:
        settings["sentence_splitter"] = reader.sentence_splitter_setting
    return settings


def tokenize_blocks(
    reader: Any, blocks: list[Any], dtype: Any, processes: int, quiet: bool
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """
    `_block_ids` of every block of `reader.document_blocks()`, in corpus order, tokenized by `processes`
    processes (a pool's ordered `imap`, so the order never depends on which finishes first).
    """
    progress = None
    if not quiet:
        corpus_bytes = sum(block.end - block.start for block in blocks)
        progress = Tqdm.tqdm(total=corpus_bytes, desc="tokenizing the corpus", unit="B", unit_scale=True)
    if processes <= 1:
        results: Iterator[tuple[np.ndarray, np.ndarray]] = (
            _block_ids(reader, block, dtype) for block in blocks
        )
        pool = None
    else:
        # Forked workers inherit the reader (spaCy pipeline, tokenizer) instead of unpickling it; each worker
        # then tokenizes on one thread, so that N processes use N cores and no more.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        pool = context.Pool(processes, initializer=_set_worker_reader, initargs=(reader, dtype))
        results = pool.imap(_worker_block_ids, blocks)
    try:
        for block, result in zip(blocks, results):
            if progress is not None:
                progress.update(block.end - block.start)
            yield result
    finally:
        if pool is not None:
            pool.terminate()
        if progress is not None:
            progress.close()


def _block_ids(reader: Any, block: Any, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """
    The block's word-piece ids, and how many of them belong to each document it touches: `lengths[0]` to the
    document open where the block starts, `lengths[k]` to the k-th it opens (0 for one without word-pieces).
    """
    documents: list[int] = []  # of each paragraph of the block, and its word-pieces
    sizes: list[int] = []

    def paragraphs() -> Iterator[list[int]]:
        for document, ids in reader.block_ids(block):
            documents.append(document)
            sizes.append(len(ids))
            yield ids

    ids = np.fromiter(itertools.chain.from_iterable(paragraphs()), dtype=dtype)
    lengths = np.zeros(documents[-1] + 1 if documents else 1, dtype=np.int64)
    np.add.at(lengths, np.asarray(documents, dtype=np.int64), np.asarray(sizes, dtype=np.int64))
    return ids, lengths


_WORKER: dict[str, Any] = {}


def _set_worker_reader(reader: Any, dtype: Any) -> None:
    _WORKER.update(reader=reader, dtype=dtype)


def _worker_block_ids(block: Any) -> tuple[np.ndarray, np.ndarray]:
    return _block_ids(_WORKER["reader"], block, _WORKER["dtype"])


class EpochStream:
    """
    A store's documents laid end to end in an epoch's order, read by position without being written out.
    The order moves blocks of `block_size` consecutive documents (block b is documents `b x block_size` up to
    the next block's first, in corpus order; `block_size` 1 moves every document alone): `blocks` is the
    epoch's order of the blocks. `read(start, stop)` finds the blocks that cover `[start, stop)` by binary
    search in the order's cumulative lengths, and joins their slices of the memory-mapped ids.

    Opening one makes two int64 arrays of one entry per block (the order and where each of its blocks ends in
    the stream), in chunks, and no Python object per block; with blocks larger than one document, also where
    each block starts in the ids (every `block_size`-th offset). An epoch's start therefore costs what its
    number of blocks costs, which the loader bounds whatever the corpus's size.
    """

    def __init__(
        self,
        ids: np.ndarray,
        offsets: np.ndarray,
        blocks: Union[np.ndarray, Sequence[int]],
        block_size: int = 1,
    ) -> None:
        self._ids = ids
        num_documents = len(offsets) - 1
        # Where each block starts in the ids, and the end: the offsets themselves when a block is a document.
        self._bounds = offsets
        if block_size > 1:
            self._bounds = np.append(np.asarray(offsets[0:num_documents:block_size]), offsets[num_documents])
        self._blocks = np.asarray(blocks, dtype=np.int64)  # no copy of an int64 array
        # Where each block of the order ends in the stream.
        self._ends = np.empty(len(self._blocks), dtype=np.int64)
        for start in range(0, len(self._blocks), _ORDER_CHUNK):
            chunk = self._blocks[start : start + _ORDER_CHUNK]
            self._ends[start : start + len(chunk)] = self._bounds[chunk + 1] - self._bounds[chunk]
        np.cumsum(self._ends, out=self._ends)
        self.length = int(self._ends[-1]) if len(self._blocks) else 0

    def read(self, start: int, stop: int) -> np.ndarray:
        """The word-piece ids at stream positions `[start, stop)`, `0 <= start <= stop <= length`."""
        pieces = []
        block = int(np.searchsorted(self._ends, start, side="right"))
        while start < stop:
            begins_at = int(self._ends[block - 1]) if block else 0
            end = min(stop, int(self._ends[block]))
            offset = int(self._bounds[self._blocks[block]]) - begins_at
            pieces.append(self._ids[offset + start : offset + end])
            start, block = end, block + 1
        return np.concatenate(pieces) if pieces else np.zeros(0, dtype=self._ids.dtype)
