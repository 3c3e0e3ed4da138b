"""
The `maelmo-merge` subcommand: joins the files of `maelmo-embed --shard K/N` into one HDF5 file, the one an
unsharded `maelmo-embed` writes (`maelmo_plugin/embedding/merge.py`).

    allennlp maelmo-merge OUTPUT.hdf5 SHARD.hdf5... [--force]
"""

import argparse

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from maelmo_plugin.commands.arguments import sentences
from maelmo_plugin.embedding.merge import merge_shards


@Subcommand.register("maelmo-merge")
class Merge(Subcommand):
    """
    Registered as a `Subcommand` with name "maelmo-merge".

    Merges the shards of one `maelmo-embed --shard K/N` run into one file (see `merge_shards`).
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "Join the files of `maelmo-embed --shard K/N` into the file one maelmo-embed run writes."
        )
        subparser = parser.add_parser(self.name, description=description, help=description)
        subparser.add_argument(
            "output_file", help="the HDF5 file to write (an existing one only with --force)"
        )
        subparser.add_argument("shard_files", nargs="+", help="the N shards' files, in any order")
        subparser.add_argument(
            "--force",
            action="store_true",
            help="replace an existing OUTPUT (kept until the new one is complete)",
        )

        def run(args: argparse.Namespace) -> None:
            try:
                count = merge_shards(args.output_file, args.shard_files, args.force)
            except ConfigurationError as error:
                subparser.error(str(error))
            print(f"Merged {len(args.shard_files)} shards, {sentences(count)}, into {args.output_file}")

        subparser.set_defaults(func=run)
        return subparser
