"""
The `maelmo-config` subcommand: prints a config as AllenNLP will see it, Jsonnet evaluated (imports, hidden
`sizes::`/`data::`/`settings::` fields, environment variables) and `-o` overrides applied, as sorted JSON.

    allennlp maelmo-config training_config/glue/rte.jsonnet [-o '{"trainer.num_epochs": 2}']

AllenNLP has no such command; a config built from a library file and settings is otherwise read only by running it.
"""

import argparse
import json

from allennlp.commands.subcommand import Subcommand
from allennlp.common import Params

from maelmo_cli.commands import config
from maelmo_cli.parser import add_subparser


@Subcommand.register("maelmo-config")
class PrintConfig(Subcommand):
    """
    Registered as a `Subcommand` with name "maelmo-config".

    Prints a training config fully expanded: what `allennlp train CONFIG -o OVERRIDES` builds from.
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = add_subparser(parser, config)

        def run(args: argparse.Namespace) -> None:
            # A missing variable or a failed assertion is Jsonnet's RuntimeError, which names the field: say it
            # as argparse's one-line error rather than a traceback.
            try:
                params = Params.from_file(args.config, args.overrides)
            except (RuntimeError, json.JSONDecodeError) as error:
                subparser.error(f"{args.config}: {error}")
            print(json.dumps(params.as_dict(quiet=True), indent=2, sort_keys=True))

        subparser.set_defaults(func=run)
        return subparser
