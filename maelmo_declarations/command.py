"""
`Command`: one row of the command table (`maelmo_declarations/commands/`), the one declaration of a `maelmo-*`
subcommand. Both command lines are generated from it: the `maelmo` front's parser, which answers `--help`, usage
errors and the refusals that need no model before AllenNLP loads, and runs a model-free command whole
(`maelmo_cli/main.py`), and the AllenNLP `Subcommand` that parses the same arguments, runs the same checks and
then the job (`maelmo_plugin/commands/subcommands.py`); both run a row with `Command.run`. The contract test
(`tests/cli/contract_test.py`) runs every row.
"""

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass

from maelmo_declarations.refusals import Refusal, disk_refusal

# The floor whose modules import neither torch, AllenNLP nor the plugin (`tests/layering_test.py`).
MODEL_FREE_PACKAGE = "maelmo_files"


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
        imported only then, so that the table costs nothing to read. A job in `maelmo_files` makes the command
        model-free (`model_free`).
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

    @property
    def model_free(self) -> bool:
        """
        Whether the job lives in `maelmo_files/`, which imports neither torch, AllenNLP nor the plugin: the
        `maelmo` front then runs the whole command without them (`maelmo_cli/main.py`), in a fraction of their
        start-up.
        """
        return self.job.startswith(f"{MODEL_FREE_PACKAGE}.")

    def run(
        self,
        subparser: argparse.ArgumentParser,
        args: argparse.Namespace,
        refused: tuple[type[Exception], ...] = (Refusal,),
    ) -> None:
        """
        Runs the checks, then the job, on `args` (parsed by `subparser`). A refusal (an exception of
        `refused`: a `Refusal`, and AllenNLP's `ConfigurationError` where AllenNLP runs the command) or a
        write the disk refused (full, over a quota, read-only) is one line and exit status 2, as argparse's
        usage errors.
        """
        module, function = self.job.split(":")
        try:
            self.check(args)
            getattr(importlib.import_module(module), function)(args)
        except refused as refusal:
            subparser.error(str(refusal))
        except (OSError, RuntimeError) as error:
            full = disk_refusal(error)
            if full is None:
                raise
            subparser.error(str(full))
