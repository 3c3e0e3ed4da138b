"""`maelmo-config`'s arguments (`maelmo_plugin/commands/config.py` evaluates the config)."""

import argparse

NAME = "maelmo-config"
DESCRIPTION = "Print a config as AllenNLP will see it: Jsonnet evaluated, overrides applied, as JSON."
REQUIRES_PLUGINS = True


def add_arguments(subparser: argparse.ArgumentParser) -> None:
    subparser.add_argument("config", help="a .jsonnet or .json training config")
    subparser.add_argument(
        "-o", "--overrides", default="", help="a JSON object of overrides, as `allennlp train -o` takes"
    )


def check(args: argparse.Namespace) -> None:
    """Nothing beyond the packaged-config lookup, which `maelmo` does for `train` too (`packaged_configs.py`)."""
