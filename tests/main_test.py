"""`maelmo` runs AllenNLP's commands with the plugin loaded from any directory, where `allennlp` needs
`.allennlp_plugins` in the working directory."""

import os
import subprocess
import sys
from pathlib import Path

from tests import FIXTURES_ROOT


def run(command, cwd):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_plugins_subcommands_run_outside_the_repository(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text((FIXTURES_ROOT / "lm" / "corpus.txt").read_text())
    result = run(
        [
            sys.executable,
            "-m",
            "maelmo_plugin",
            "maelmo-vocab",
            str(corpus),
            "--output-dir",
            "vocab",
            "--vocab-size",
            "60",
        ],
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    entries = (tmp_path / "vocab" / "vocab.txt").read_text().split("\n")
    assert entries[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def test_the_maelmo_command_is_installed_beside_allennlp(tmp_path):
    command = Path(sys.executable).with_name("maelmo")
    assert command.exists(), "scripts/setup.sh installs the package, and with it the `maelmo` command"
    result = run([str(command), "--help"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "usage: maelmo" in result.stdout
    assert all(name in result.stdout for name in ("maelmo-vocab", "maelmo-prepare", "maelmo-embed", "train"))
