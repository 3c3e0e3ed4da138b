"""`maelmo-config`'s arguments (`maelmo_plugin/commands/config.py` evaluates the config)."""

import argparse

from maelmo_declarations.command import Command

NAME = "maelmo-config"


def add_arguments(subparser: argparse.ArgumentParser) -> None:
    subparser.add_argument("config", help="a .jsonnet or .json training config")
    subparser.add_argument(
        "-o", "--overrides", default="", help="a JSON object of overrides, as `allennlp train -o` takes"
    )


def check(args: argparse.Namespace) -> None:
    """Nothing beyond the packaged-config lookup, which `maelmo` does for `train` too (`packaged_configs.py`)."""


COMMAND = Command(
    name=NAME,
    description="Print a config as AllenNLP will see it: Jsonnet evaluated, overrides applied, as JSON.",
    add_arguments=add_arguments,
    check=check,
    job="maelmo_plugin.commands.config:run",
    requires_plugins=True,
)
