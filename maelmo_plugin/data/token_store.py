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
import json
import logging
import os
import shutil
import tempfile
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
from allennlp.common.checks import ConfigurationError
from allennlp.common.tqdm import Tqdm

from maelmo_plugin.data.dataset_readers.mlm_corpus import expand_paths

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
IDS = "ids.bin"
OFFSETS = "offsets.npy"
FORMAT = 1


def is_store(path: Any) -> bool:
    return isinstance(path, (str, os.PathLike)) and os.path.isfile(os.path.join(path, MANIFEST))


class TokenStore:
    """A store on disk (see the module docstring), opened read-only."""

    def __init__(self, directory: str) -> None:
        self.directory = str(directory)
        with open(os.path.join(self.directory, MANIFEST), encoding="utf-8") as manifest:
            self.manifest: Dict[str, Any] = json.load(manifest)
        if self.manifest.get("format") != FORMAT:
            raise ConfigurationError(
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

    def write_stream(self, order: Sequence[int], path: str) -> np.memmap:
        """The documents concatenated in `order`, written to `path` and mapped."""
        ids = self.ids()
        with open(path, "wb") as out:
            for document in order:
                ids[self.offsets[document] : self.offsets[document + 1]].tofile(out)
        del ids
        return np.memmap(path, dtype=self.dtype, mode="r", shape=(self.num_tokens,))

    def check_matches(self, reader: Any, data_path: Optional[str] = None) -> None:
        """Refuses a reader whose vocabulary or id-changing settings are not the store's."""
        expected = reader_settings(reader)
        differences = [
            f"{name}: the store has {self.manifest['reader'].get(name)!r}, the config {value!r}"
            for name, value in expected.items()
            if self.manifest["reader"].get(name) != value
        ]
        if differences:
            raise ConfigurationError(
                f"The token store {data_path or self.directory} was prepared with other settings than the "
                f"dataset reader's ({'; '.join(differences)}). Its ids would mean other word-pieces. Prepare "
                f"the corpus again with this vocabulary (allennlp maelmo-prepare ... --vocab <the config's "
                f"vocab> --force), or point the config at the vocabulary the store was made with, "
                f"{self.manifest['reader'].get('vocabulary')}."
            )

    def check_corpus(self) -> None:
        """
        Refuses a store whose corpus files have changed size since it was prepared (a stale store). A file
        that is gone is not a change: a store travels without its text. Sizes only, since hashing a large
        corpus would cost every run the time the store saves; the manifest keeps the hashes for a full check.
        """
        changed = [
            f"{entry['path']} ({entry['bytes']} bytes when prepared, {os.path.getsize(entry['path'])} now)"
            for entry in self.manifest["corpus"]
            if os.path.isfile(entry["path"]) and os.path.getsize(entry["path"]) != entry["bytes"]
        ]
        if changed:
            raise ConfigurationError(
                f"The corpus of the token store {self.directory} has changed since it was prepared: "
                f"{'; '.join(changed)}. Prepare it again (allennlp maelmo-prepare ... --force)."
            )

    @classmethod
    def prepare(
        cls,
        reader: Any,
        corpus: Union[str, Sequence[str]],
        directory: str,
        force: bool = False,
        quiet: bool = False,
        describe_corpus: bool = True,
    ) -> "TokenStore":
        """
        Tokenizes `corpus` with `reader` (a `maelmo_mlm_corpus`) into a store at `directory`. The store
        appears whole or not at all: it is written aside and renamed, so a crash leaves no half store to be
        taken for a good one. `describe_corpus: false` leaves the files' sizes and hashes out of the manifest
        (reading a large corpus twice), for a store that lives only as long as its process.
        """
        if os.path.exists(directory):
            if not force:
                raise ConfigurationError(f"{directory} exists; give --force to replace it.")
            shutil.rmtree(directory)
        parent = os.path.dirname(os.path.abspath(directory))
        os.makedirs(parent, exist_ok=True)
        work = tempfile.mkdtemp(prefix=".maelmo_store_", dir=parent)
        try:
            paragraphs = reader.paragraphs_by_document(corpus)
            if not quiet:
                paragraphs = Tqdm.tqdm(paragraphs, desc="tokenizing the corpus")
            dtype = np.uint16 if len(reader.tokenizer.hf_tokenizer) <= 65536 else np.int32
            offsets = _write_ids(paragraphs, os.path.join(work, IDS), dtype)
            if offsets[-1] == 0:
                raise ConfigurationError(f"The corpus {corpus} has no word-pieces.")
            np.save(os.path.join(work, OFFSETS), offsets)
            manifest = {
                "format": FORMAT,
                "dtype": np.dtype(dtype).name,
                "num_documents": len(offsets) - 1,
                "num_tokens": int(offsets[-1]),
                "corpus": [_describe_file(path) for path in expand_paths(corpus)] if describe_corpus else [],
                "reader": reader_settings(reader),
            }
            with open(os.path.join(work, MANIFEST), "w", encoding="utf-8") as out:
                json.dump(manifest, out, indent=2)
            os.replace(work, directory)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        logger.info(
            "Token store %s: %d documents, %d word-pieces (%s).",
            directory, manifest["num_documents"], manifest["num_tokens"], manifest["dtype"],
        )
        return cls(directory)


def reader_settings(reader: Any) -> Dict[str, Any]:
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


def _write_ids(paragraphs: Iterator[Tuple[int, List[int]]], path: str, dtype: Any) -> np.ndarray:
    ends: List[int] = []
    position, previous = 0, None
    with open(path, "wb") as out:
        for document, ids in paragraphs:
            if previous is not None and document != previous:
                ends.append(position)
            previous = document
            np.asarray(ids, dtype=dtype).tofile(out)
            position += len(ids)
    if previous is not None:
        ends.append(position)
    return np.asarray([0] + ends, dtype=np.int64)


def _describe_file(path: str) -> Dict[str, Any]:
    digest = hashlib.sha256()
    with open(path, "rb") as corpus_file:
        for block in iter(lambda: corpus_file.read(1 << 20), b""):
            digest.update(block)
    return {"path": os.path.abspath(path), "bytes": os.path.getsize(path), "sha256": digest.hexdigest()}
