"""`maelmo-arena`'s arguments and the refusals that need no model (`maelmo_plugin/commands/arena.py` runs it)."""

import argparse
import os

from maelmo_declarations.command import Command
from maelmo_declarations.owned_outputs import check_output
from maelmo_declarations.refusals import Refusal

NAME = "maelmo-arena"


def add_arguments(subparser: argparse.ArgumentParser) -> None:
    subparser.add_argument(
        "arena_file",
        help="the arena's Jsonnet file: its arms, corpus, budget, seeds and GLUE tasks "
        "(examples/encoder_arena/ has one; docs/encoders.md#the-arena)",
    )
    subparser.add_argument(
        "-s",
        "--serialization-dir",
        required=True,
        help="the arena's folder: its runs, their configs and logs, tuning.json and the table (verdicts.md); "
        "the same command continues an unfinished one",
    )
    subparser.add_argument(
        "--force",
        action="store_true",
        help="start a finished arena in that folder afresh, its own files removed first (without it, the same "
        "command continues an arena, finished or not, or extends it with more rates, seeds or tasks)",
    )
    subparser.add_argument(
        "--core",
        type=int,
        help="pin this worker's runs to this CPU core, one thread each (another worker, on another core, shares "
        "the folder); under torchrun, without --gpu, each worker takes its LOCAL_RANK's core",
    )
    subparser.add_argument(
        "--gpu",
        action="store_true",
        help="train on a GPU: GPU 0, or under torchrun each worker its LOCAL_RANK's",
    )
    subparser.add_argument(
        "--allow-parameter-mismatch",
        action="store_true",
        help="compare arms whose parameter counts part beyond the arena file's parameter_tolerance",
    )


def check(args: argparse.Namespace) -> None:
    if not os.path.isfile(args.arena_file):
        raise Refusal(f"The arena file {args.arena_file} is not a file: give an arena's .jsonnet file.")
    if args.core is not None and not 0 <= args.core < (os.cpu_count() or 1):
        raise Refusal(f"--core {args.core} is not a core of this machine (0 to {(os.cpu_count() or 1) - 1}).")
    # An arena's own folder is continued whether or not --force is given: the check refuses what is not the
    # arena's (a user's folder, another command's output, files it did not write), with or without it.
    check_output(args.serialization_dir, NAME, True, [args.arena_file], option="The arena folder")


COMMAND = Command(
    name=NAME,
    description="Compare encoders fairly: each arm's learning rate tuned by one rule, paired seeds, each gated "
    "against its untrained architecture on GLUE, and a verdict table; continued when run again.",
    add_arguments=add_arguments,
    check=check,
    job="maelmo_plugin.commands.arena:run",
    requires_plugins=True,
)
