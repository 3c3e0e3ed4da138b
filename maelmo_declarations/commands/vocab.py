"""`maelmo-vocab`'s arguments and the refusals that need no corpus read (`maelmo_files/commands/wordpiece_vocab.py`)."""

import argparse
import glob
import os
from collections.abc import Sequence

from maelmo_declarations.command import Command
from maelmo_declarations.owned_outputs import check_file_output, check_output
from maelmo_declarations.refusals import Refusal, check_writable_directory

NAME = "maelmo-vocab"
VOCAB_FILE_NAME = "vocab.txt"


def add_arguments(subparser: argparse.ArgumentParser) -> None:
    subparser.add_argument(
        "corpus", nargs="+", help="plain-text files or globs (quote globs, e.g. 'data/*.txt')"
    )
    subparser.add_argument(
        "--output-dir", required=True, help="directory to write vocab.txt to (created if missing)"
    )
    subparser.add_argument(
        "--vocab-size", type=int, default=30000, help="number of entries, special tokens included"
    )
    subparser.add_argument(
        "--min-frequency", type=int, default=2, help="minimum count of a pair for it to be merged"
    )
    subparser.add_argument(
        "--lowercase",
        action="store_true",
        help="train an uncased vocabulary (lower-cases and strips accents)",
    )
    subparser.add_argument("--force", action="store_true", help="replace an existing DIR/vocab.txt")


def check_output_dir(output_dir: str, force: bool, corpus: Sequence[str] = ()) -> None:
    """DIR/vocab.txt, by the rule of every writing command (`maelmo_declarations/owned_outputs.py`)."""
    if os.path.lexists(output_dir) and not os.path.isdir(output_dir):
        raise Refusal(
            f"--output-dir {output_dir} is a file: give a directory (vocab.txt is written into it)."
        )
    inputs = [path for pattern in corpus for path in glob.glob(os.path.expanduser(pattern)) or [pattern]]
    vocab_file = os.path.join(output_dir, VOCAB_FILE_NAME)
    if os.path.isdir(output_dir):
        check_file_output(vocab_file, NAME, force, inputs, example=VOCAB_FILE_NAME)
    elif inputs:
        check_output(vocab_file, NAME, force, inputs, directory=False)  # overlap only: the folder is new


def check_training(output_dir: str, min_frequency: int) -> None:
    """What training refuses before it reads the corpus (the vocabulary size is checked with the tokens)."""
    if min_frequency < 1:
        raise Refusal(
            f"min_frequency (--min-frequency) is {min_frequency}: it counts how often a pair must occur to be "
            f"merged, so it is at least 1 (2 by default)."
        )
    check_writable_directory(output_dir, "--output-dir")  # before the training, not after it


def check(args: argparse.Namespace) -> None:
    check_output_dir(args.output_dir, args.force, args.corpus)
    check_training(args.output_dir, args.min_frequency)


COMMAND = Command(
    name=NAME,
    description="Train a WordPiece vocab.txt for Masked ELMo on your own plain-text corpus.",
    add_arguments=add_arguments,
    check=check,
    job="maelmo_files.commands.wordpiece_vocab:run",
    # Training a vocabulary needs no registered AllenNLP class, so there is no point in importing plugins
    # (allennlp-models is slow to import) or offering `--include-package`.
    requires_plugins=False,
)
