"""`maelmo-prepare`'s arguments and the refusals that need no tokenizer (`maelmo_plugin/commands/prepare.py`)."""

import argparse
import os

from maelmo_cli.checks import check_new_directory

NAME = "maelmo-prepare"
DESCRIPTION = "Tokenize a Masked ELMo pre-training corpus once, into a token store for every run."
# Tokenizing needs no registered AllenNLP class: no plugins to import, no `--include-package`.
REQUIRES_PLUGINS = False


def add_arguments(subparser: argparse.ArgumentParser) -> None:
    subparser.add_argument("corpus", nargs="+", help="plain-text files or globs (quote globs)")
    subparser.add_argument(
        "--vocab", required=True, help="the word-piece vocab.txt, tokenizer directory or hub name"
    )
    subparser.add_argument("--output-dir", required=True, help="the store's directory (must not exist)")
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
    subparser.add_argument("--force", action="store_true", help="replace an existing store")


def check(args: argparse.Namespace) -> None:
    check_new_directory(args.output_dir, args.force, "--output-dir")
