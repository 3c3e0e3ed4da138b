"""
`maelmo --help`, `maelmo --version` and a mistyped command, answered before AllenNLP is imported: the list of
commands is AllenNLP 2.10.1's own and the plugin's, each with the help AllenNLP prints for it
(`tests/cli/top_level_test.py` compares the two, so a new AllenNLP or a new command cannot drift unseen).
"""

import argparse
import difflib
from importlib import metadata
from typing import Optional

from maelmo_declarations.commands import COMMANDS
from maelmo_declarations.parser import ArgumentParserWithDefaults

# AllenNLP's own subcommands and their help, as `allennlp --help` lists them.
ALLENNLP_COMMANDS = {
    "build-vocab": "Build a vocabulary from an experiment config file.",
    "cached-path": "Cache remote files to the AllenNLP cache.",
    "checklist": "Run a trained model through a checklist suite.",
    "count-instances": "Count the number of training instances in an experiment config file.",
    "diff": "Display a diff between two model checkpoints.",
    "evaluate": "Evaluate the specified model + dataset(s).",
    "find-lr": "Find a learning rate range.",
    "predict": "Use a trained model to make predictions.",
    "print-results": "Print results from allennlp serialization directories to the console.",
    "push-to-hf": "Push a model to the Hugging Face Hub.\n\n        Pushing your models to the Hugging Face Hub "
    "([hf.co](https://hf.co/))\n        allows you to share your models with others. On top of that, you can "
    "try\n        the models directly in the browser with the available widgets.\n\n        Before running "
    "this command, login to Hugging Face with `huggingface-cli login`.\n\n        You can specify either a "
    "`serialization_dir` or an `archive_path`, but using the\n        first option is recommended since the "
    "`serialization_dir` contains more useful\n        information such as metrics and TensorBoard traces."
    "\n        ",
    "test-install": "Test AllenNLP installation.",
    "train": "Train a model.",
}


def known_commands() -> dict[str, str]:
    return {**ALLENNLP_COMMANDS, **{name: command.description for name, command in COMMANDS.items()}}


def version_line() -> str:
    """The plugin's version beside AllenNLP's, from the installed distributions' metadata (nothing imported)."""

    def installed(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return f"maelmo_plugin {installed('maelmo_plugin')}, AllenNLP {installed('allennlp')}"


def top_parser(prog: str = "maelmo") -> argparse.ArgumentParser:
    """The top-level parser `allennlp.commands.parse_args` builds with the plugin loaded, without AllenNLP."""
    parser = ArgumentParserWithDefaults(description="Run AllenNLP", prog=prog)
    parser.add_argument("--version", action="version", version=version_line())
    subparsers = parser.add_subparsers(title="Commands", metavar="")
    for name, help_text in sorted(known_commands().items()):
        subparsers.add_parser(name, help=help_text)
    return parser


def answer_top_level(argv: list[str], prog: str = "maelmo") -> None:
    """
    Exits as AllenNLP would, without it, where `argv` asks for the top level (`--help`, `--version`, nothing)
    or names a mistyped command (with what it probably meant); returns otherwise. A name like no known command
    goes on to AllenNLP, where another plugin may have registered it.
    """
    if not argv or argv[0] in ("-h", "--help", "--version"):
        parser = top_parser(prog)
        if not argv:
            parser.print_help()  # as AllenNLP's main does with no command
            raise SystemExit(0)
        parser.parse_args(argv[:1])
    suggestion = _meant(argv[0])
    if suggestion is not None:
        top_parser(prog).error(
            f"unknown command {argv[0]!r}: did you mean {suggestion!r}? ('{prog} --help' lists them)"
        )


def _meant(name: str) -> Optional[str]:
    if name.startswith("-") or name in known_commands():
        return None
    close = difflib.get_close_matches(name, known_commands(), n=1, cutoff=0.75)
    return close[0] if close else None
