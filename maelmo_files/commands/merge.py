"""
The `maelmo-merge` job: joins the files of `maelmo-embed --shard K/N` into one HDF5 file, the one an
unsharded `maelmo-embed` writes (`maelmo_files/embedding/merge.py`).

    allennlp maelmo-merge OUTPUT.hdf5 SHARD.hdf5... [--force]

Declared in `maelmo_declarations/commands/merge.py`.
"""

import argparse

from maelmo_declarations.options import sentences
from maelmo_files.embedding.merge import merge_shards


def run(args: argparse.Namespace) -> None:
    """Merges the shards of one `maelmo-embed --shard K/N` run into one file (see `merge_shards`)."""
    count = merge_shards(args.output_file, args.shard_files, args.force)
    print(f"Merged {len(args.shard_files)} shards, {sentences(count)}, into {args.output_file}")
