"""Argument types that several subcommands share."""

import argparse
from typing import Union

from maelmo_plugin.embedding.shards import Shard


def layer_argument(value: str) -> Union[int, str]:
    """`--layer`: an integer (0 = the embeddings, -1 = the top layer) or "mix"."""
    if value == "mix":
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"an integer or 'mix', got {value!r}") from None


def shard_argument(value: str) -> Shard:
    """`--shard K/N`: the K-th (from 0) of N parts."""
    try:
        return Shard.parse(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def sentences(count: int) -> str:
    return f"{count} sentence{'' if count == 1 else 's'}"
