"""
`maelmo-merge`: joins the files of `maelmo-embed --shard K/N` (`shards.py`) into one file in the unsharded
layout: every line's dataset once, and the `sentence_to_index` of the whole input. Because a shard's batches
are the unsharded run's, the merged file holds the vectors an unsharded run writes, bit for bit.

Before anything is written, each shard is checked as hostile input, and then the set together:
- its record (`maelmo_shard`) is well formed, of this format, and its sizes agree with its own split of the
  input (`Shard.lines`) and with the datasets the file actually holds, before anything is sized by them;
- every member is a plain dataset: an HDF5 soft or external link, an external or virtual dataset (which
  would bring another line's or another file's data into the output) is refused;
- its contents hash to the record's sha256 (`content_sha256`): a shard changed since it was written is
  refused, and so is a `sentence_to_index` naming a line the shard does not hold;
- all are of one run (the same input, model and options), each file once, every part 0 to N - 1 once.
Any fault is refused in one line naming the file and what is wrong. The output is written in the command's
own `OUTPUT.partial/` (`partial_directory`: never through a link or another command's file) and moved into
place when complete; an existing one is replaced only with `force`.
"""

import contextlib
import json
import logging
import os
from typing import Any

import h5py

from maelmo_declarations import owned_outputs
from maelmo_declarations.refusals import Refusal
from maelmo_declarations.shards import FORMAT, MAX_SHARDS, Shard
from maelmo_files.common.partial_output import partial_directory, remove_owned
from maelmo_files.common.parts import index_parts, refuse_repeated
from maelmo_files.embedding.differences import differences
from maelmo_files.embedding.hdf5_layout import (
    LIBVER,
    SENTENCE_TO_INDEX,
    copy_line_datasets,
    read_sentence_to_index,
    write_sentence_to_index,
)
from maelmo_files.embedding.shards import SHARD_ATTRIBUTE, content_sha256

logger = logging.getLogger(__name__)

MERGED = "merged.hdf5"
# A record is a few hundred bytes: its fingerprint, counts and checksum.
_MAX_RECORD = 1 << 16
COMMAND = "maelmo-merge"  # whose output the file is, in its manifest (maelmo_declarations/owned_outputs.py)


def merge_shards(output_file: str, shard_files: list[str], force: bool = False) -> int:
    """Merges `shard_files` (in any order) into `output_file`; returns the number of sentences."""
    owned_outputs.check_file_output(output_file, COMMAND, force, shard_files, example="vectors.hdf5")
    records = check_shards(shard_files)
    ordered = sorted(shard_files, key=lambda path: records[path]["shard"])
    directory, lock = partial_directory(output_file, frozenset({MERGED}), "maelmo-merge")
    sentence_to_index: dict[str, str] = {}
    count = 0
    try:
        merged = remove_owned(directory, MERGED)
        with h5py.File(merged, "x", libver=LIBVER) as output:
            for path in ordered:
                count += copy_line_datasets(path, output)
                with h5py.File(path, "r") as shard:
                    sentence_to_index.update(read_sentence_to_index(shard))  # in input order: the last wins
            write_sentence_to_index(output, sentence_to_index)
        os.replace(merged, output_file)
        owned_outputs.write_manifest(output_file, COMMAND, directory=False)
    except OSError as error:  # a full disk, a quota: one line, and the output as it was
        raise Refusal(
            f"Writing {output_file} failed ({error.strerror or error}): {output_file} is unchanged; free "
            f"space (or fix the cause), then run the command again."
        ) from None
    finally:
        # Its own files only; a merge has nothing to continue from, so nothing is kept.
        for name in (MERGED, "lock"):
            path = os.path.join(directory, name)
            if os.path.islink(path) or os.path.isfile(path):
                os.remove(path)
        lock.release()
        with contextlib.suppress(OSError):
            os.rmdir(directory)
    logger.info("Merged %d shards (%d sentences) into %s", len(ordered), count, output_file)
    return count


def check_shards(shard_files: list[str]) -> dict[str, dict[str, Any]]:
    """Each file's `maelmo_shard` record, once the set is checked (a `Refusal` naming the fault)."""
    if not shard_files:
        raise Refusal("Give the shard files to merge: maelmo-merge OUTPUT SHARD...")
    refuse_repeated(shard_files, "file", "shard")
    records = {path: _checked_shard(path) for path in shard_files}
    first = shard_files[0]
    reference = records[first]
    for path, record in records.items():
        changed = differences(reference["run"], record["run"])
        if record["dims"] and reference["dims"] and record["dims"] != reference["dims"]:
            changed.append(f"vectors of size {record['dims'][0]} against {reference['dims'][0]}")
        for key in ("num_shards", "num_lines"):
            if record[key] != reference[key]:
                changed.insert(0, f"{key} {record[key]} against {reference[key]}")
        if changed:
            raise Refusal(
                f"{path} is a shard of another run than {first} ({'; '.join(changed)}): merge the shards of "
                f"one maelmo-embed run, with the same archive, input and options."
            )
    # Bounded: the records' N was checked against MAX_SHARDS.
    indexed = ((path, record["shard"]) for path, record in records.items())
    index_parts(indexed, reference["num_shards"], "shard", "every shard's file", "maelmo-embed")
    return records


def _checked_shard(path: str) -> dict[str, Any]:
    """The record of the shard at `path`, once its record, members and contents are checked."""
    if not os.path.isfile(path):
        if os.path.isdir(path):
            raise Refusal(
                f"The shard {path!r} is a directory: give the files maelmo-embed --shard K/N wrote."
            )
        raise Refusal(f"No such shard file: {path!r}.")
    try:
        with h5py.File(path, "r") as shard:
            record = _record(path, shard.attrs.get(SHARD_ATTRIBUTE))
            lines = range(*record["lines"])
            dims = _check_members(path, shard, lines)
            if content_sha256(shard, lines) != record["sha256"]:
                raise Refusal(
                    f"{path} was changed since maelmo-embed wrote it (its contents no longer match the sha256 "
                    f"in its {SHARD_ATTRIBUTE} record): embed this shard again."
                )
    except OSError as error:
        raise Refusal(
            f"{path} is not a readable HDF5 file ({error}): give the files maelmo-embed --shard wrote."
        ) from None
    return {**record, "dims": dims}


def _record(path: str, text: Any) -> dict[str, Any]:
    """The shard's record, its fields and sizes checked against each other and `Shard`'s split."""
    if text is None:
        raise Refusal(
            f"{path} is not a shard (it has no {SHARD_ATTRIBUTE} attribute): give the files that "
            f"maelmo-embed --shard K/N wrote; a file embedded whole needs no merge."
        )
    fault = f"{path}'s {SHARD_ATTRIBUTE} record is malformed"
    if isinstance(text, (str, bytes)) and len(text) > _MAX_RECORD:
        raise Refusal(f"{fault} (longer than any record maelmo-embed writes): embed this shard again.")
    try:
        record = json.loads(text)
    except (TypeError, ValueError, RecursionError):  # RecursionError: JSON nested deeper than any record is
        raise Refusal(f"{fault} (not JSON, or nested too deep): embed this shard again.") from None
    if not isinstance(record, dict):
        raise Refusal(f"{fault} (not a JSON object): embed this shard again.")
    if record.get("format") != FORMAT:
        raise Refusal(
            f"{path} is a shard of format {record.get('format')!r}; this maelmo-merge reads format {FORMAT} "
            f"(which records a checksum of the contents): embed its run's shards again with this version."
        )
    run = record.get("run")
    options = run.get("options") if isinstance(run, dict) else None
    window = options.get("window") if isinstance(options, dict) else None
    lines = record.get("lines")
    counts = [record.get(key) for key in ("shard", "num_shards", "num_lines")] + [window]
    if (
        not all(_is_count(value) for value in counts)
        or not (isinstance(lines, list) and len(lines) == 2 and all(_is_count(value) for value in lines))
        or not isinstance(record.get("sha256"), str)
    ):
        raise Refusal(
            f"{fault} (shard, num_shards, num_lines, lines, sha256 and run.options.window must be present, "
            f"the numbers non-negative integers): embed this shard again."
        )
    shard, num_shards, num_lines = record["shard"], record["num_shards"], record["num_lines"]
    assert isinstance(window, int)  # checked above, for mypy
    if not 0 <= shard < num_shards <= MAX_SHARDS or window < 1:
        raise Refusal(
            f"{fault} (shard {shard}/{num_shards}, window {window}: it needs 0 <= K < N <= {MAX_SHARDS} and a "
            f"window of at least 1): embed this shard again."
        )
    expected = Shard(shard, num_shards).lines(num_lines, window)
    if [expected.start, expected.stop] != lines:
        raise Refusal(
            f"{fault}: shard {shard}/{num_shards} of {num_lines} lines holds lines {expected.start} to "
            f"{expected.stop - 1}, and its record says {lines}. Embed this shard again."
        )
    return record


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_members(path: str, shard: h5py.File, lines: range) -> list[int]:
    """
    The shard holds exactly one plain dataset per line of its part and `sentence_to_index`: no link to
    another member or file, no data stored outside the file; `sentence_to_index` names only its lines.
    """
    names = set(shard)
    # Counted (by arithmetic: `len` of a range past sys.maxsize overflows) before any set the size of the
    # record's range is built: the file's members bound the work.
    counted = len(names) == lines.stop - lines.start + 1
    if not counted or names != {str(index) for index in lines} | {SENTENCE_TO_INDEX}:
        raise Refusal(
            f"{path} should hold the datasets of lines {lines.start} to {lines.stop - 1} and "
            f"{SENTENCE_TO_INDEX}, and holds {len(names)} other or fewer members: it was altered since "
            f"maelmo-embed wrote it; embed this shard again."
        )
    dims: set[int] = set()
    for name in sorted(names):
        link = shard.get(name, getlink=True)
        if not isinstance(link, h5py.HardLink):
            raise Refusal(
                f"{path}: member {name!r} is an HDF5 {type(link).__name__}, which maelmo-embed never writes "
                f"(it would bring other data into the merge): embed this shard again."
            )
        member = shard[name]
        if not isinstance(member, h5py.Dataset) or member.external or member.is_virtual:
            raise Refusal(
                f"{path}: member {name!r} is not a dataset stored in the file (a group, or an external or "
                f"virtual dataset), which maelmo-embed never writes: embed this shard again."
            )
        if name != SENTENCE_TO_INDEX:
            _check_line_dataset(path, name, member)
            dims.add(member.shape[-1])
    if len(dims) > 1:
        raise Refusal(
            f"{path} holds vectors of {len(dims)} sizes ({', '.join(map(str, sorted(dims)[:3]))}), where one model "
            f"gives one: it was altered since maelmo-embed wrote it; embed this shard again."
        )
    if shard[SENTENCE_TO_INDEX].shape != (1,):
        index = None
    else:
        try:
            index = read_sentence_to_index(shard)
        except (TypeError, ValueError, IndexError, RecursionError):
            index = None
    valid = {str(line) for line in lines}
    if not isinstance(index, dict) or not all(
        isinstance(key, str) and value in valid for key, value in index.items()
    ):
        raise Refusal(
            f"{path}: its {SENTENCE_TO_INDEX} is not a mapping of sentences to its own lines {lines.start} to "
            f"{lines.stop - 1}: it was altered since maelmo-embed wrote it; embed this shard again."
        )
    return sorted(dims)


# A line's vectors: (dim,) or (layers, dim) pooled per sentence, (tokens, dim) or (layers, tokens, dim) per
# word-piece or word; no model has more layers than this.
_MAX_LAYERS = 64


def _check_line_dataset(path: str, name: str, dataset: h5py.Dataset) -> None:
    """
    A line's dataset is what maelmo-embed writes, checked before a byte of it is read: float vectors stored
    whole in the file (contiguous, uncompressed, every byte allocated: reading it allocates no more than the
    file holds), in a shape its `tokens` attribute and the layers bound, and no attribute but `tokens` (the
    checksum covers only that one, and the merge would copy any other).
    """
    fault = f"{path}: the dataset of line {name}"
    extra = sorted(set(dataset.attrs) - {"tokens"})
    if extra:
        raise Refusal(
            f"{fault} has the attribute {extra[0]!r}, which maelmo-embed never writes (and its checksum does not "
            f"cover): embed this shard again."
        )
    stored = dataset.chunks is None and dataset.compression is None
    if not stored or dataset.id.get_storage_size() != dataset.nbytes or dataset.dtype.kind != "f":
        raise Refusal(
            f"{fault} is not float vectors stored whole in the file (its shape {dataset.shape} is declared "
            f"beyond the bytes it holds, or it is chunked, compressed or not float), as maelmo-embed writes "
            f"them: embed this shard again."
        )
    tokens = dataset.attrs.get("tokens")
    num_tokens = len(tokens) if tokens is not None and getattr(tokens, "ndim", 1) == 1 else None
    shape = dataset.shape
    per_token = len(shape) >= 2 and num_tokens is not None and shape[-2] == num_tokens
    if (
        not (1 <= len(shape) <= 3)
        or (len(shape) == 3 and not per_token)
        or (len(shape) == 3 and shape[0] > _MAX_LAYERS)
    ):
        raise Refusal(
            f"{fault} has the shape {shape}, which is none of maelmo-embed's ((dim), (layers, dim), (tokens, "
            f"dim) or (layers, tokens, dim), with its {num_tokens} tokens): embed this shard again."
        )
