"""
`maelmo-merge STORE PART...`: joins the parts of `maelmo-prepare --shard K/N` (`store_files.py`) into the
token store the unsharded `maelmo-prepare` writes, bit for bit (its `ids.bin`, `offsets.npy` and
`manifest.json`): the parts' `(ids, lengths)` are replayed in order into one `StoreWriter`.

Before anything is sized by them, each part is checked as hostile input, and then the set together:
- it is a real directory (not a link) holding `part.json`, `ids.bin` and `lengths.bin` as plain files;
- its record is well formed, of this format, and the sizes of its two files agree with it; its lengths are
  non-negative and add up to its ids; both files hash to the sha256 its record holds (the ids are hashed as
  they are copied, before the store is moved into place);
- all are of one run (the same corpus files and sizes, reader settings, id type and N), each directory once,
  every part 0 to N - 1 once; the corpus files still have the sizes the parts read.
Any fault is refused in one line naming the part and what is wrong. The merge then hashes the corpus files
for the store's manifest (a part read only its share of them). The store is written aside and moved into
place by the rule of `maelmo_declarations/owned_outputs.py`, as `maelmo-prepare`'s own output: an existing
store is replaced only with `force`, and a folder that is not a store never.
"""

import hashlib
import json
import logging
import os
import shutil
import tempfile
from typing import Any

import numpy as np

from maelmo_declarations import owned_outputs
from maelmo_declarations.refusals import Refusal, check_writable_directory
from maelmo_declarations.shards import MAX_SHARDS
from maelmo_files.common.parts import index_parts, refuse_repeated
from maelmo_files.embedding.differences import differences
from maelmo_files.token_store.store_files import (
    COMMAND,
    FORMAT,
    IDS,
    LENGTHS,
    MANIFEST,
    PART_FORMAT,
    PART_RECORD,
    StoreWriter,
    describe_file,
    write_json,
)

logger = logging.getLogger(__name__)

# A record lists the corpus files, a few hundred bytes each.
_MAX_RECORD = 16 * 1024 * 1024
_DTYPES = ("uint16", "int32")
# The lengths are read this many at a time: a merge holds no array the size of the corpus.
_CHUNK = 1 << 20
_AGAIN = "prepare this part again (maelmo-prepare --shard K/N)"


def is_part(path: str) -> bool:
    """Whether `path` looks like a part of `maelmo-prepare --shard` (a directory with a part record)."""
    return os.path.isdir(path) and os.path.lexists(os.path.join(path, PART_RECORD))


def merge_parts(output: str, parts: list[str], force: bool = False) -> dict[str, Any]:
    """Merges `parts` (in any order) into the store `output`; returns its manifest."""
    records = check_parts(parts)
    reference = records[parts[0]]
    corpus = [entry["path"] for entry in reference["corpus"]]
    previous = owned_outputs.check_output(output, COMMAND, force, [*parts, *corpus], option="The output")
    ordered = sorted(parts, key=lambda path: records[path]["shard"])
    parent = os.path.dirname(os.path.abspath(output))
    check_writable_directory(parent, "the output's parent")
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".maelmo_store_", dir=parent)
    try:
        dtype = np.dtype(reference["dtype"])
        with StoreWriter(work) as writer:
            for path in ordered:
                _replay(writer, path, records[path], dtype)
            num_documents, num_tokens = writer.finish()
        if num_tokens == 0:
            raise Refusal(f"The corpus {', '.join(corpus)} of these parts has no word-pieces.")
        manifest = {
            "format": FORMAT,
            "dtype": dtype.name,
            "num_documents": num_documents,
            "num_tokens": num_tokens,
            "corpus": [describe_file(path) for path in corpus],
            "reader": reference["reader"],
        }
        _check_corpus(parts[0], reference)  # once more: it must not have changed while it was hashed
        write_json(os.path.join(work, MANIFEST), manifest)
        previous = owned_outputs.check_output(output, COMMAND, force, [*parts, *corpus], option="The output")
        owned_outputs.move_into_place(work, output, COMMAND, previous)
    except OSError as error:  # a full disk, a quota: one line, and the output as it was
        shutil.rmtree(work, ignore_errors=True)
        raise Refusal(
            f"Writing {output} failed ({error.strerror or error}): {output} is unchanged; free space (or fix "
            f"the cause), then run the command again."
        ) from None
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    logger.info("Merged %d parts (%d documents) into the token store %s", len(parts), num_documents, output)
    return manifest


def check_parts(parts: list[str]) -> dict[str, dict[str, Any]]:
    """Each part's record, once the set is checked (a `Refusal` naming the fault)."""
    if not parts:
        raise Refusal("Give the parts to merge: maelmo-merge STORE PART...")
    refuse_repeated(parts, "directory", "part")
    records = {path: _checked_part(path) for path in parts}
    first = parts[0]
    reference = records[first]
    for path, record in records.items():
        changed = differences(reference["reader"], record["reader"])
        for key in ("num_shards", "dtype", "corpus"):
            if record[key] != reference[key]:
                changed.insert(0, f"{key} {_shown(record[key])} against {_shown(reference[key])}")
        if changed:
            raise Refusal(
                f"{path} is a part of another run than {first} ({'; '.join(changed)}): merge the parts of one "
                f"maelmo-prepare --shard K/N run, with the same corpus, vocabulary and N."
            )
    # Bounded: the records' N was checked against MAX_SHARDS.
    indexed = ((path, record["shard"]) for path, record in records.items())
    index_parts(indexed, reference["num_shards"], "part", "every part", "maelmo-prepare")
    _check_corpus(first, reference)
    return records


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _what_instead(path: str, other_kind: str) -> str:
    """What `path` is where a plain directory or file was expected: a link, `other_kind`, or nothing."""
    if os.path.islink(path):
        return "a symbolic link"
    return other_kind if os.path.lexists(path) else "missing"


def _checked_part(path: str) -> dict[str, Any]:
    """The record of the part at `path`, once its files, record and lengths are checked."""
    if os.path.islink(path) or not os.path.isdir(path):
        what = _what_instead(path, "not a directory")
        raise Refusal(f"The part {path!r} is {what}: give the directories maelmo-prepare --shard K/N wrote.")
    files = {name: os.path.join(path, name) for name in (PART_RECORD, IDS, LENGTHS)}
    for name, file in files.items():
        if os.path.islink(file) or not os.path.isfile(file):
            what = _what_instead(file, "not a plain file")
            raise Refusal(f"{path}: its {name} is {what}, which maelmo-prepare never writes: {_AGAIN}.")
    record = _record(path, files[PART_RECORD])
    itemsize = np.dtype(record["dtype"]).itemsize
    expected = {IDS: record["num_ids"] * itemsize, LENGTHS: record["num_lengths"] * 8}
    for name, size in expected.items():
        actual = os.path.getsize(files[name])
        if actual != size:
            raise Refusal(
                f"{path}: its {name} holds {actual} bytes, and its {PART_RECORD} says {size}: it was cut short "
                f"or altered since maelmo-prepare wrote it; {_AGAIN}."
            )
    total = 0
    digest = hashlib.sha256()
    lengths = np.memmap(files[LENGTHS], dtype="<i8", mode="r")
    for start in range(0, len(lengths), _CHUNK):
        chunk = np.asarray(lengths[start : start + _CHUNK])
        digest.update(chunk.tobytes())
        if chunk.min() < 0:
            raise Refusal(
                f"{path}: its {LENGTHS} holds a negative length, which maelmo-prepare never writes: {_AGAIN}."
            )
        total += int(chunk.sum(dtype=np.int64))
    if total != record["num_ids"]:
        raise Refusal(
            f"{path}: its documents' lengths add up to {total} ids, and it holds {record['num_ids']}: it was "
            f"altered since maelmo-prepare wrote it; {_AGAIN}."
        )
    _check_digest(path, LENGTHS, digest, record)
    return record


def _check_digest(path: str, name: str, digest: Any, record: dict[str, Any]) -> None:
    if digest.hexdigest() != record["sha256"][name]:
        raise Refusal(
            f"{path}: its {name} was changed since maelmo-prepare wrote it (it no longer matches the sha256 in "
            f"its {PART_RECORD}): {_AGAIN}."
        )


def _record(path: str, file: str) -> dict[str, Any]:
    """The part's record, its fields checked before anything is sized by them."""
    fault = f"{path}'s {PART_RECORD} is malformed"
    if os.path.getsize(file) > _MAX_RECORD:
        raise Refusal(f"{fault} (longer than any record maelmo-prepare writes): {_AGAIN}.")
    try:
        with open(file, encoding="utf-8") as stream:
            record = json.load(stream)
    except (ValueError, RecursionError, UnicodeDecodeError):
        raise Refusal(f"{fault} (not JSON, or nested too deep): {_AGAIN}.") from None
    if not isinstance(record, dict):
        raise Refusal(f"{fault} (not a JSON object): {_AGAIN}.")
    if record.get("format") != PART_FORMAT:
        raise Refusal(
            f"{path} is a part of format {record.get('format')!r}; this maelmo-merge reads format {PART_FORMAT}: "
            f"{_AGAIN} with this version."
        )
    counts = [record.get(key) for key in ("shard", "num_shards", "num_ids", "num_lengths")]
    corpus = record.get("corpus")
    if (
        not all(_is_count(value) for value in counts)
        or record.get("dtype") not in _DTYPES
        or not isinstance(record.get("reader"), dict)
        or not isinstance(record.get("sha256"), dict)
        or set(record["sha256"]) != {IDS, LENGTHS}
        or not all(isinstance(value, str) for value in record["sha256"].values())
        or not isinstance(corpus, list)
        or not corpus
        or not all(
            isinstance(entry, dict)
            and set(entry) == {"path", "bytes"}
            and isinstance(entry["path"], str)
            and _is_count(entry["bytes"])
            for entry in corpus
        )
    ):
        raise Refusal(
            f"{fault} (shard, num_shards, num_ids and num_lengths must be non-negative integers, dtype one of "
            f"{', '.join(_DTYPES)}, reader an object, sha256 of {IDS} and {LENGTHS}, and corpus a list of paths and "
            f"sizes): {_AGAIN}."
        )
    if not 0 <= record["shard"] < record["num_shards"] <= MAX_SHARDS or record["num_lengths"] < 1:
        raise Refusal(
            f"{fault} (part {record['shard']}/{record['num_shards']} with {record['num_lengths']} lengths: it needs "
            f"0 <= K < N <= {MAX_SHARDS} and at least one length): {_AGAIN}."
        )
    return record


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_corpus(path: str, record: dict[str, Any]) -> None:
    """The corpus files are where the parts read them, with the sizes they had."""
    for entry in record["corpus"]:
        file = entry["path"]
        if not os.path.isfile(file):
            raise Refusal(
                f"The corpus file {file} of the part {path} is gone: the merge hashes the corpus for the store's "
                f"manifest; run it where the corpus is."
            )
        if os.path.getsize(file) != entry["bytes"]:
            raise Refusal(
                f"The corpus file {file} has changed since the part {path} was prepared ({entry['bytes']} bytes "
                f"then, {os.path.getsize(file)} now): prepare every part again."
            )


def _replay(writer: StoreWriter, path: str, record: dict[str, Any], dtype: np.dtype) -> None:
    """The part's ids and lengths into `writer`, as its blocks would have been added, a chunk at a time."""
    digest = hashlib.sha256()
    if record["num_ids"]:
        ids = np.memmap(os.path.join(path, IDS), dtype=dtype, mode="r")
        for start in range(0, len(ids), _CHUNK):
            chunk = np.asarray(ids[start : start + _CHUNK])
            digest.update(chunk.tobytes())
            writer.add(chunk, np.zeros(1, dtype=np.int64))
    _check_digest(path, IDS, digest, record)  # before the store is moved into place
    lengths = np.memmap(os.path.join(path, LENGTHS), dtype="<i8", mode="r")
    for start in range(0, len(lengths), _CHUNK):
        chunk = np.asarray(lengths[start : start + _CHUNK], dtype=np.int64)
        # A chunk after the first continues no document: its first length opens one.
        writer.add(np.zeros(0, dtype=dtype), chunk if start == 0 else np.concatenate([[0], chunk]))
