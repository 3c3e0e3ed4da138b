"""
What every merge of a sharded run checks of its set of parts, whatever a part is (a `maelmo-embed --shard` file,
a `maelmo-prepare --shard` directory): each given once, each index once, none missing. One definition, so that
a fault fixed in one merge is fixed in both.
"""

import os
from collections.abc import Iterable

from maelmo_declarations.refusals import Refusal


def refuse_repeated(paths: list[str], noun: str, unit: str) -> None:
    """A `Refusal` when two of `paths` are one file (by their real paths): "a and b are the same `noun`"."""
    seen: dict[str, str] = {}
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:
            raise Refusal(f"{seen[real]} and {path} are the same {noun}: give each {unit} once.")
        seen[real] = path


def index_parts(
    indexed: Iterable[tuple[str, int]], num_shards: int, unit: str, every: str, command: str
) -> dict[int, str]:
    """
    {index: path} of `(path, index)` pairs whose indices were checked against `num_shards` (at most
    `MAX_SHARDS`); a `Refusal` for an index given twice, or for those missing, named (`every`: what to give,
    `command`: what writes a missing one).
    """
    by_index: dict[int, str] = {}
    for path, index in indexed:
        if index in by_index:
            raise Refusal(
                f"{by_index[index]} and {path} are both {unit} {index}/{num_shards}: give each {unit} once."
            )
        by_index[index] = path
    if len(by_index) < num_shards:
        missing = [str(index) for index in range(num_shards) if index not in by_index]
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        plural = len(missing) > 1
        raise Refusal(
            f"{unit.capitalize()}{'s' if plural else ''} {shown} of {num_shards} {'are' if plural else 'is'} "
            f"missing: give {every} (run {command} --shard K/{num_shards} for each missing K first)."
        )
    return by_index
