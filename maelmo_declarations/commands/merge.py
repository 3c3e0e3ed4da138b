"""`maelmo-merge`'s arguments and the refusals that need no shard opened (`maelmo_files/commands/merge.py`)."""

import argparse
import os

from maelmo_declarations.command import Command
from maelmo_declarations.owned_outputs import check_file_output, check_output

NAME = "maelmo-merge"


def add_arguments(subparser: argparse.ArgumentParser) -> None:
    subparser.add_argument(
        "output_file",
        help="the HDF5 file to write, or the token store's directory for maelmo-prepare's parts (an existing "
        "one only with --force)",
    )
    subparser.add_argument(
        "shard_files",
        nargs="+",
        help="the N shards' files of maelmo-embed --shard, or the N part directories of maelmo-prepare "
        "--shard, in any order",
    )
    subparser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing OUTPUT (kept until the new one is complete)",
    )


def check(args: argparse.Namespace) -> None:
    if any(os.path.isdir(path) for path in args.shard_files):  # the parts of a token store
        check_output(args.output_file, "maelmo-prepare", args.force, args.shard_files, option="The output")
        return
    check_file_output(args.output_file, NAME, args.force, args.shard_files, example="vectors.hdf5")


COMMAND = Command(
    name=NAME,
    description="Join the files of `maelmo-embed --shard K/N` into the file one maelmo-embed run writes, or the "
    "parts of `maelmo-prepare --shard K/N` into the store one maelmo-prepare run writes.",
    add_arguments=add_arguments,
    check=check,
    job="maelmo_files.commands.merge:run",
    requires_plugins=True,
)
