"""
The `maelmo-merge` job: joins the files of `maelmo-embed --shard K/N` into one HDF5 file, the one an
unsharded `maelmo-embed` writes (`maelmo_files/embedding/merge.py`), or the directories of
`maelmo-prepare --shard K/N` into the token store an unsharded `maelmo-prepare` writes
(`maelmo_files/token_store/merge.py`).

    allennlp maelmo-merge OUTPUT.hdf5 SHARD.hdf5... [--force]
    allennlp maelmo-merge STORE PART... [--force]

Declared in `maelmo_declarations/commands/merge.py`.
"""

import argparse
import os

from maelmo_declarations.options import sentences
from maelmo_files.embedding.merge import merge_shards
from maelmo_files.token_store.merge import merge_parts


def run(args: argparse.Namespace) -> None:
    """
    Merges the shards of one `maelmo-embed --shard K/N` run into one file (see `merge_shards`), or, when
    directories are given, the parts of one `maelmo-prepare --shard K/N` run into a token store.
    """
    if any(os.path.isdir(path) for path in args.shard_files):
        manifest = merge_parts(args.output_file, args.shard_files, args.force)
        print(
            f"Merged {len(args.shard_files)} parts into a token store of {manifest['num_documents']} documents "
            f"and {manifest['num_tokens']} word-pieces: {args.output_file}"
        )
        return
    count = merge_shards(args.output_file, args.shard_files, args.force)
    print(f"Merged {len(args.shard_files)} shards, {sentences(count)}, into {args.output_file}")
