"""
`maelmo --help`, `maelmo --version` and a mistyped command answer before AllenNLP is imported
(`maelmo_declarations/top_level.py`). Before (issue 70), each loaded the whole of AllenNLP first (6.2 CPU-s), and a
typo got `argument : invalid choice` with no suggestion.
"""

import subprocess
import sys

import pytest

from maelmo_declarations.commands import COMMANDS
from maelmo_declarations.top_level import ALLENNLP_COMMANDS, top_parser, version_line
from tests.cli.main_test import HEAVY

LIGHT = (
    "import sys\nfrom maelmo_cli.main import main\nsys.argv = ['maelmo', *sys.argv[1:]]\n"
    "try:\n    main()\nexcept SystemExit as exit:\n    code = exit.code\n"
    f"print('LOADED', [name for name in {HEAVY!r} if name in sys.modules], code)\n"
)
ALLENNLP = (
    "import sys\nimport maelmo_plugin\nfrom allennlp.commands import main\n"
    "sys.argv = ['maelmo', *sys.argv[1:]]\nmain(prog='maelmo')\n"
)


def run(code: str, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300)


def test_the_help_lists_what_allennlp_lists_with_the_plugin_loaded_and_imports_nothing_heavy():
    light, heavy = run(LIGHT, "--help"), run(ALLENNLP, "--help")
    assert heavy.returncode == 0, heavy.stderr[-2000:]
    assert light.stdout == heavy.stdout + "LOADED [] 0\n"
    assert run(LIGHT).stdout == heavy.stdout + "LOADED [] 0\n"  # no command: the help, as AllenNLP gives it


def test_the_version_names_the_plugins_and_allennlps_and_imports_nothing_heavy():
    result = run(LIGHT, "--version")
    assert result.stdout.startswith(version_line() + "\n") and result.stdout.endswith("LOADED [] 0\n")
    assert version_line().startswith("maelmo_plugin ") and ", AllenNLP 2.10.1" in version_line()


@pytest.mark.parametrize(
    "typo, meant", [("trian", "train"), ("evalute", "evaluate"), ("maelmo-embd", "maelmo-embed")]
)
def test_a_mistyped_command_says_what_it_probably_meant_and_imports_nothing_heavy(typo, meant):
    result = run(LIGHT, typo, "config.jsonnet")
    assert result.stdout.endswith("LOADED [] 2\n")
    last = result.stderr.strip().splitlines()[-1]
    assert (
        last
        == f"maelmo: error: unknown command '{typo}': did you mean '{meant}'? ('maelmo --help' lists them)"
    )


def test_the_list_holds_every_command_of_the_plugin_and_of_allennlp():
    parser = top_parser()
    (subparsers,) = [action for action in parser._actions if action.dest == "==SUPPRESS==" and action.choices]
    assert set(subparsers.choices) == set(ALLENNLP_COMMANDS) | set(COMMANDS)
