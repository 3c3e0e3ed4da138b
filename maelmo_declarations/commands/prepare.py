"""`maelmo-prepare`'s arguments and the refusals that need no tokenizer (`maelmo_plugin/commands/prepare.py`)."""

import argparse
import glob
import os

from maelmo_declarations.command import Command
from maelmo_declarations.options import shard_argument
from maelmo_declarations.owned_outputs import check_output
from maelmo_declarations.refusals import Refusal, check_writable_directory

NAME = "maelmo-prepare"


def add_arguments(subparser: argparse.ArgumentParser) -> None:
    subparser.add_argument("corpus", nargs="+", help="plain-text files or globs (quote globs)")
    subparser.add_argument(
        "--vocab", required=True, help="the word-piece vocab.txt, tokenizer directory or hub name"
    )
    subparser.add_argument(
        "--output-dir",
        required=True,
        help="the store's directory: a new one, or a previous store with --force",
    )
    subparser.add_argument(
        "--document-start-pattern", default=None, help="as the reader's: a line that starts a document"
    )
    subparser.add_argument(
        "--processes",
        type=int,
        default=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
        help="tokenize with this many processes (default: every core this process may use); the store is "
        "the same for any number",
    )
    subparser.add_argument(
        "--shard",
        type=shard_argument,
        default=None,
        metavar="K/N",
        help="write only the K-th (from 0) of N parts of the store (about 1/N of the corpus's bytes; a compressed "
        "file goes whole to one part) into --output-dir; maelmo-merge STORE PART... joins the N parts into the "
        "store this command writes without --shard, bit for bit",
    )
    subparser.add_argument(
        "--force",
        action="store_true",
        help="replace a previous store (never a folder this command did not write)",
    )


def check(args: argparse.Namespace) -> None:
    if args.processes < 1:
        raise Refusal(f"--processes must be at least 1, got {args.processes}.")
    patterns = [part.strip() for pattern in args.corpus for part in pattern.split(",") if part.strip()]
    inputs = [path for pattern in patterns for path in glob.glob(os.path.expanduser(pattern)) or [pattern]]
    check_output(args.output_dir, "maelmo-prepare", args.force, [*inputs, args.vocab], option="--output-dir")
    check_writable_directory(os.path.dirname(os.path.abspath(args.output_dir)), "--output-dir's parent")


COMMAND = Command(
    name=NAME,
    description="Tokenize a Masked ELMo pre-training corpus once, into a token store for every run.",
    add_arguments=add_arguments,
    check=check,
    job="maelmo_plugin.commands.prepare:run",
    # Tokenizing needs no registered AllenNLP class: no plugins to import, no `--include-package`.
    requires_plugins=False,
)
