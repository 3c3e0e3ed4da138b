"""
The `maelmo` command. What needs no model answers here, before AllenNLP, torch or the plugin is imported:
`--help`, `--version` and a mistyped command (`maelmo_declarations/top_level.py`), a `maelmo-*` subcommand's
`--help`, its usage errors and its refusals (a mistyped archive, an existing output, a bad `--shard`, ...), all
from the command table (`maelmo_declarations/commands/`), and a packaged config's name. A model-free command
(`maelmo-vocab`, `maelmo-merge`: its job lives in `maelmo_files/`) then runs whole here. Everything else goes
on to AllenNLP's command line with the plugin loaded (`maelmo_plugin/__main__.py`), whose subcommands are
generated from the same table and run the same checks and jobs: `python -m maelmo_plugin` and `allennlp
maelmo-*`, which take that path only, say and write the same.
"""

import sys

from maelmo_declarations.commands import COMMANDS
from maelmo_declarations.packaged_configs import with_packaged_config
from maelmo_declarations.parser import command_parser
from maelmo_declarations.refusals import Refusal
from maelmo_declarations.top_level import answer_top_level


def answer_before_loading(argv: list[str]) -> list[str]:
    """
    Runs the light half of `argv`'s command: exits (as argparse does: status 0 after `--help`, 2 after a usage
    error or a refusal) if that answers it, else returns `argv` with a packaged config's name resolved.
    """
    answer_top_level(argv)
    argv = with_packaged_config(argv)
    command = COMMANDS.get(argv[0]) if argv else None
    if command is not None:
        parser, subparser = command_parser(command)
        args = parser.parse_args(argv)
        try:
            command.check(args)
        except Refusal as refusal:
            subparser.error(str(refusal))
    return argv


def main() -> None:
    argv = answer_before_loading(sys.argv[1:])
    command = COMMANDS.get(argv[0]) if argv else None
    if command is not None and command.model_free:
        # Its checks run again with the job, as on AllenNLP's path; `--include-package` (merge's parser has
        # it) is not needed, since the job uses no registered class.
        parser, subparser = command_parser(command)
        command.run(subparser, parser.parse_args(argv))
        return
    sys.argv[1:] = argv
    from maelmo_plugin.__main__ import main as run_with_the_plugin

    run_with_the_plugin()


if __name__ == "__main__":
    main()
