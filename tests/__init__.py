import json
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

# Tests never reach a hub: a hub name must fail fast instead of hanging on the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import maelmo_plugin  # noqa: E402,F401  registers every "type" name, whichever test file runs alone

PROJECT_ROOT = Path(__file__).parent.parent
FIXTURES_ROOT = PROJECT_ROOT / "tests" / "fixtures"


def run_allennlp(
    arguments, env_overrides, cwd=PROJECT_ROOT, check=True, timeout=900
) -> subprocess.CompletedProcess:
    """`allennlp ARGUMENTS` in a subprocess, as a user runs it, offline; fails the test on a non-zero exit."""
    env = {**os.environ, **env_overrides, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    command = [sys.executable, "-m", "allennlp", *arguments]
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check:
        assert result.returncode == 0, result.stderr[-3000:]
    return result


def run_allennlp_in_process(*arguments: str) -> None:
    """
    `allennlp ARGUMENTS` in this process, through the command line's code path (`main` reading sys.argv) without
    its start-up: what it prints reaches capsys, and what the test patched stays patched.
    """
    from allennlp.commands import main

    with mock.patch.object(sys, "argv", ["allennlp", *arguments]):
        main(prog="allennlp")


def variant_config(directory: Path, base: Path, **fields) -> str:
    """
    A variant of the config `base` written into `directory`, as a user writes one: `base` plus, for each field
    given (settings, sizes, data: dicts), `name+:: {...}`. Returns its path.
    """
    changes = ", ".join(f"{name}+:: {json.dumps(value)}" for name, value in fields.items())
    path = Path(directory) / f"variant_{len(list(Path(directory).glob('variant_*.jsonnet')))}.jsonnet"
    path.write_text(f'(import "{Path(base).resolve()}") + {{ {changes} }}\n')
    return str(path)


def file_tree(directory) -> dict[str, bytes]:
    """{relative path: bytes} of every file under `directory`: what a test compares before and after a refusal."""
    return {
        os.path.relpath(os.path.join(root, name), directory): open(os.path.join(root, name), "rb").read()
        for root, _, names in os.walk(directory)
        for name in names
    }
