"""
The `maelmo-config` job: prints a config as AllenNLP will see it, Jsonnet evaluated (imports, hidden
`sizes::`/`data::`/`settings::` fields, environment variables) and `-o` overrides applied, as sorted JSON.

    allennlp maelmo-config training_config/glue/rte.jsonnet [-o '{"trainer.num_epochs": 2}']

AllenNLP has no such command; a config built from a library file and settings is otherwise read only by running it.
Declared in `maelmo_declarations/commands/config.py`.
"""

import argparse
import json

from allennlp.common import Params

from maelmo_declarations.refusals import Refusal


def run(args: argparse.Namespace) -> None:
    """Prints the config fully expanded: what `allennlp train CONFIG -o OVERRIDES` builds from."""
    # A missing variable or a failed assertion is Jsonnet's RuntimeError, which names the field: say it as a
    # refusal (one line) rather than a traceback.
    try:
        params = Params.from_file(args.config, args.overrides)
    except (RuntimeError, json.JSONDecodeError) as error:
        raise Refusal(f"{args.config}: {error}") from None
    print(json.dumps(params.as_dict(quiet=True), indent=2, sort_keys=True))
