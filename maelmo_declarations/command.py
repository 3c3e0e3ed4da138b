"""
`Command`: one row of the command table (`maelmo_declarations/commands/`), the one declaration of a `maelmo-*`
subcommand. Both command lines are generated from it: the `maelmo` front's parser, which answers `--help`, usage
errors and the refusals that need no model before AllenNLP loads (`maelmo_cli/main.py`), and the AllenNLP
`Subcommand` that parses the same arguments, runs the same checks and then the job
(`maelmo_plugin/commands/subcommands.py`). The contract test (`tests/cli/contract_test.py`) runs every row.
"""

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """
    # Parameters

    name : `str`
        The subcommand, as `maelmo NAME` and `allennlp NAME` take it.
    description : `str`
        One line, for `--help` and the list of commands.
    add_arguments : `Callable[[argparse.ArgumentParser], None]`
        Adds the arguments, with their documented choices (`choices=`), to the subcommand's parser.
    check : `Callable[[argparse.Namespace], None]`
        Raises a `Refusal` (`refusals.py`) for what the command refuses with no model loaded: the paths, the
        option pairs, what an output may replace.
    job : `str`
        `"module:function"`, the function that does the work with the parsed arguments once `check` has passed;
        imported only then, so that the table costs nothing to read.
    requires_plugins : `bool`
        Whether the job needs the registered classes (AllenNLP then imports plugins and offers
        `--include-package`).
    """

    name: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    check: Callable[[argparse.Namespace], None]
    job: str
    requires_plugins: bool = True
