"""
The parser that AllenNLP's command line gives a subcommand, rebuilt without importing AllenNLP, so that
`maelmo maelmo-* --help` and usage errors answer at once and read exactly as AllenNLP prints them
(`tests/cli/main_test.py` compares the two).
"""

import argparse
from typing import Any

from maelmo_declarations.command import Command


class ArgumentParserWithDefaults(argparse.ArgumentParser):
    """
    AllenNLP 2.10.1's parser (`allennlp.commands.ArgumentParserWithDefaults`), which adds a meaningful
    default to an argument's help; importing it would import AllenNLP whole.
    """

    _action_defaults_to_ignore = {"help", "store_true", "store_false", "store_const"}

    @staticmethod
    def _is_empty_default(default: Any) -> bool:
        if default is None:
            return True
        if isinstance(default, (str, list, tuple, set)):
            return not bool(default)
        return False

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        default = kwargs.get("default")
        if kwargs.get("action") not in self._action_defaults_to_ignore and not self._is_empty_default(
            default
        ):
            kwargs["help"] = f"{kwargs.get('help', '')} (default = {default})"
        return super().add_argument(*args, **kwargs)


def add_subparser(subparsers: "argparse._SubParsersAction[Any]", command: Command) -> argparse.ArgumentParser:
    """`command`'s subparser, as the plugin's `Subcommand.add_subparser` makes it for AllenNLP."""
    subparser = subparsers.add_parser(command.name, description=command.description, help=command.description)
    command.add_arguments(subparser)
    return subparser


def command_parser(
    command: Command, prog: str = "maelmo"
) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """
    The top-level parser with `command` as its one subcommand, built as `allennlp.commands.parse_args` builds
    it (with `--include-package` where the command imports plugins), and that subparser.
    """
    parser = ArgumentParserWithDefaults(description="Run AllenNLP", prog=prog)
    subparsers = parser.add_subparsers(title="Commands", metavar="")
    subparser = add_subparser(subparsers, command)
    if command.requires_plugins:
        subparser.add_argument(
            "--include-package", type=str, action="append", default=[], help="additional packages to include"
        )
    return parser, subparser
