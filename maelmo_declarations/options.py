"""Argument types and choices that several subcommands share (standard library only)."""

import argparse
from typing import Union

from maelmo_declarations.shards import Shard

# `--pool` of maelmo-embed and the `maelmo_representations` predictor: word-pieces into words, or into one
# vector per line.
POOLING = ("first", "mean", "sentence")
# `--precision` of maelmo-embed and the predictor: of the encoder's products (lm/modules/recurrence/reduced_precision.py).
PRECISIONS = ("fp32", "int8", "bf16", "auto")
# `--storage` of maelmo-embed: the vectors' type in the HDF5 file (maelmo_plugin/embedding/output_size.py).
# float16 halves the file; its rounding error against float32 is in docs/embedding.md.
STORAGES = ("float32", "float16")


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
