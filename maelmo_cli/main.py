"""
The `maelmo` command. What needs no model answers here, before AllenNLP, torch or the plugin is imported:
`--help`, `--version` and a mistyped command (`top_level.py`), a `maelmo-*` subcommand's `--help`, its usage
errors and its refusals (a mistyped archive, an existing output, a bad `--shard`, ...), and a packaged config's
name. Everything else, and every command that passes those
checks, goes on to AllenNLP's command line with the plugin loaded (`maelmo_plugin/__main__.py`, whose subcommands run
the same checks from the same definitions: `python -m maelmo_plugin` and `allennlp maelmo-*`, which take that
path only, say the same).
"""

import sys

from maelmo_cli.checks import Refusal
from maelmo_cli.commands import COMMANDS
from maelmo_cli.packaged_configs import resolve_in_command_line
from maelmo_cli.parser import command_parser
from maelmo_cli.top_level import answer_top_level


def with_packaged_config(argv: list[str]) -> list[str]:
    """`argv` with a packaged config's name resolved (`packaged_configs.py`); exits 2 on a name that is none."""
    try:
        return resolve_in_command_line(argv)
    except ValueError as error:
        print(f"maelmo: error: {error}", file=sys.stderr)
        sys.exit(2)


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
        except (Refusal, FileNotFoundError) as refusal:
            subparser.error(str(refusal))
    return argv


def main() -> None:
    sys.argv[1:] = answer_before_loading(sys.argv[1:])
    from maelmo_plugin.__main__ import main as run_with_the_plugin

    run_with_the_plugin()


if __name__ == "__main__":
    main()
