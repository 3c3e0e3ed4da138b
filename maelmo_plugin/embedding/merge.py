"""
`maelmo-merge`: joins the files of `maelmo-embed --shard K/N` (`shards.py`) into one file in the unsharded
layout: every line's dataset once, and the `sentence_to_index` of the whole input. Because a shard's batches
are the unsharded run's, the merged file holds the vectors an unsharded run writes, bit for bit.

Before anything is written, the shards are checked together: each file must be a shard (its `maelmo_shard`
record), all of one run (the same input, model and options), and every part 0 to N - 1 given exactly once.
Any other set is refused in one line naming the file and what is wrong. The output is written aside and
moved into place when complete; an existing one is replaced only with `force`.
"""

import json
import logging
import os
from typing import Any

import h5py
from allennlp.common.checks import ConfigurationError

from maelmo_plugin.common.partial_output import check_output_path, partial_path
from maelmo_plugin.embedding.job import (
    LIBVER,
    copy_line_datasets,
    differences,
    read_sentence_to_index,
    write_sentence_to_index,
)
from maelmo_plugin.embedding.shards import SHARD_ATTRIBUTE

logger = logging.getLogger(__name__)


def merge_shards(output_file: str, shard_files: list[str], force: bool = False) -> int:
    """Merges `shard_files` (in any order) into `output_file`; returns the number of sentences."""
    check_output_path(output_file, force, example="vectors.hdf5")
    records = check_shards(shard_files)
    ordered = sorted(shard_files, key=lambda path: records[path]["shard"])
    partial = partial_path(output_file)
    sentence_to_index: dict[str, str] = {}
    count = 0
    try:
        with h5py.File(partial, "w", libver=LIBVER) as output:
            for path in ordered:
                count += copy_line_datasets(path, output)
                with h5py.File(path, "r") as shard:
                    sentence_to_index.update(read_sentence_to_index(shard))  # in input order: the last wins
            write_sentence_to_index(output, sentence_to_index)
        os.replace(partial, output_file)
    except BaseException:
        if os.path.exists(partial):
            os.remove(partial)
        raise
    logger.info("Merged %d shards (%d sentences) into %s", len(ordered), count, output_file)
    return count


def check_shards(shard_files: list[str]) -> dict[str, dict[str, Any]]:
    """Each file's `maelmo_shard` record, once the set is checked (a `ConfigurationError` naming the fault)."""
    if not shard_files:
        raise ConfigurationError("Give the shard files to merge: maelmo-merge OUTPUT SHARD...")
    records = {path: _record(path) for path in shard_files}
    first = shard_files[0]
    reference = records[first]
    by_index: dict[int, str] = {}
    for path, record in records.items():
        changed = differences(reference["run"], record["run"])
        if record["num_shards"] != reference["num_shards"]:
            changed.insert(
                0, f"--shard {record['shard']}/{record['num_shards']} against N = {reference['num_shards']}"
            )
        if changed:
            raise ConfigurationError(
                f"{path} is a shard of another run than {first} ({'; '.join(changed)}): merge the shards of "
                f"one maelmo-embed run, with the same archive, input and options."
            )
        index = record["shard"]
        if index in by_index:
            raise ConfigurationError(
                f"{by_index[index]} and {path} are both shard {index}/{record['num_shards']}: give each shard once."
            )
        by_index[index] = path
        _check_complete(path, record)
    missing = [str(index) for index in range(reference["num_shards"]) if index not in by_index]
    if missing:
        raise ConfigurationError(
            f"Shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} of {reference['num_shards']} "
            f"{'are' if len(missing) > 1 else 'is'} missing: give every shard's file (run maelmo-embed --shard "
            f"K/{reference['num_shards']} for each missing K first)."
        )
    return records


def _record(path: str) -> dict[str, Any]:
    if not os.path.isfile(path):
        raise ConfigurationError(f"No such shard file: {path!r}.")
    try:
        with h5py.File(path, "r") as shard:
            text = shard.attrs.get(SHARD_ATTRIBUTE)
    except OSError as error:
        raise ConfigurationError(
            f"{path} is not an HDF5 file ({error}): give the files maelmo-embed --shard wrote."
        ) from None
    if text is None:
        raise ConfigurationError(
            f"{path} is not a shard (it has no {SHARD_ATTRIBUTE} attribute): give the files that "
            f"maelmo-embed --shard K/N wrote; a file embedded whole needs no merge."
        )
    return json.loads(text)


def _check_complete(path: str, record: dict[str, Any]) -> None:
    """A shard holds one dataset per line of its part (a file altered since it was written does not)."""
    first, end = record["lines"]
    with h5py.File(path, "r") as shard:
        names = {name for name in shard if name != "sentence_to_index"}
    expected = {str(index) for index in range(first, end)}
    if names != expected:
        raise ConfigurationError(
            f"{path} should hold the datasets of lines {first} to {end - 1} and holds {len(names)} other or "
            f"fewer: it was altered since maelmo-embed wrote it; embed this shard again."
        )
