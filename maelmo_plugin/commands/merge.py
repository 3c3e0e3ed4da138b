"""
The `maelmo-merge` subcommand: joins the files of `maelmo-embed --shard K/N` into one HDF5 file, the one an
unsharded `maelmo-embed` writes (`maelmo_plugin/embedding/merge.py`).

    allennlp maelmo-merge OUTPUT.hdf5 SHARD.hdf5... [--force]
"""

import argparse

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from maelmo_cli.arguments import sentences
from maelmo_cli.checks import Refusal
from maelmo_cli.commands import merge
from maelmo_cli.parser import add_subparser
from maelmo_plugin.embedding.merge import merge_shards


@Subcommand.register("maelmo-merge")
class Merge(Subcommand):
    """
    Registered as a `Subcommand` with name "maelmo-merge".

    Merges the shards of one `maelmo-embed --shard K/N` run into one file (see `merge_shards`).
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = add_subparser(parser, merge)

        def run(args: argparse.Namespace) -> None:
            try:
                merge.check(args)
                count = merge_shards(args.output_file, args.shard_files, args.force)
            except (ConfigurationError, Refusal) as error:
                subparser.error(str(error))
            print(f"Merged {len(args.shard_files)} shards, {sentences(count)}, into {args.output_file}")

        subparser.set_defaults(func=run)
        return subparser
