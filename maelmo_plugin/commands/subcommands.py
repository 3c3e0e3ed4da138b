"""
AllenNLP's `Subcommand`s, one registered for each row of the command table (`maelmo_declarations/commands/`):
`allennlp maelmo-embed ...`, `python -m maelmo_plugin maelmo-embed ...` and the `maelmo` front parse the same
arguments, since all three are built from the same declaration. The job runs once the row's checks pass (the
ones `maelmo` ran before it imported AllenNLP; `allennlp maelmo-*` comes here directly).

A refusal is one line and exit status 2, as argparse's usage errors: the plugin's own (a `Refusal`), a config
AllenNLP cannot build (its `ConfigurationError`) and a write the disk refused (full, over a quota, read-only),
caught by `Command.run` for every command of the table (`__main__.py` does the same for AllenNLP's own
`train`).
"""

import argparse

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from maelmo_declarations.command import Command
from maelmo_declarations.commands import COMMANDS
from maelmo_declarations.parser import add_subparser
from maelmo_declarations.refusals import Refusal


def run(command: Command, subparser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """`command`'s checks and job, as the `maelmo` front runs them, with AllenNLP's `ConfigurationError`."""
    command.run(subparser, args, refused=(Refusal, ConfigurationError))


def subcommand(command: Command) -> type[Subcommand]:
    """The `Subcommand` of `command`, registered with AllenNLP under its name."""

    def add(self: Subcommand, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = add_subparser(parser, command)
        subparser.set_defaults(func=lambda args: run(command, subparser, args))
        return subparser

    generated = type(
        "".join(part.title() for part in command.name.split("-")),
        (Subcommand,),
        {
            "__doc__": f'Registered as a `Subcommand` with name "{command.name}".\n\n{command.description}',
            "__module__": __name__,
            "requires_plugins": command.requires_plugins,
            "add_subparser": add,
        },
    )
    return Subcommand.register(command.name)(generated)


SUBCOMMANDS = {name: subcommand(command) for name, command in COMMANDS.items()}
