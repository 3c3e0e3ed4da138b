"""
`maelmo maelmo-arena` end to end, as a user runs it: the tiny arena with GLUE (two arms, two seeds, the fixture
corpus and RTE), killed part-way and run again, to its table. Slow: about 40 runs of `allennlp train`.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from maelmo_plugin.arena.runs import FineTuning, Pretraining
from tests import PROJECT_ROOT

ARENA = "tests/fixtures/arena/tiny_glue.jsonnet"


def arena_command(folder) -> list[str]:
    return [sys.executable, "-m", "maelmo_cli.main", "maelmo-arena", ARENA, "-s", str(folder)]


@pytest.mark.slow
def test_an_arena_killed_part_way_continues_to_its_table(tmp_path):
    folder = tmp_path / "arena"
    first = subprocess.Popen(arena_command(folder), cwd=PROJECT_ROOT, start_new_session=True)
    seed2 = Pretraining("lstm", 0.01, 2).folder(folder)  # the seeds start once the sweep has chosen
    deadline = time.monotonic() + 600
    while not seed2.exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)  # the worker and the run it trains
    first.wait()
    swept = {
        run.name: (run.folder(folder) / "metrics.json").stat().st_mtime_ns
        for run in (Pretraining("lstm", rate, 1) for rate in (0.003, 0.01))
    }
    again = subprocess.run(arena_command(folder), cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    # What had finished was kept, not trained again.
    assert {name: (folder / "pretrain" / name / "metrics.json").stat().st_mtime_ns for name in swept} == swept
    tuning = json.loads((folder / "tuning.json").read_text())
    assert set(tuning["arms"]) == {"lstm", "masked_elmo"}
    assert tuning["arms"]["lstm"]["rate"] in (0.003, 0.01) and tuning["arms"]["masked_elmo"]["rate"] == 0.01
    table = json.loads((folder / "verdicts.json").read_text())
    assert [row["what"].split(",")[0] for row in table["comparisons"]] == [
        "final validation perplexity",
        "GLUE ft",
        "GLUE fz",
    ]
    assert all(row["pairs"] == 2 for row in table["comparisons"])
    for arm in table["arms"]:
        assert 0 <= arm["glue_ft"] <= 100 and 0 <= arm["untrained_glue_fz"] <= 100
    for seed in (1, 2):  # every GLUE run read its own seed's archive, or drew its architecture afresh
        run = FineTuning("masked_elmo", seed, "rte", "fz", untrained=False)
        config = json.loads((run.folder(folder) / "config.json").read_text())
        embedder = config["model"]["text_field_embedder"]["token_embedders"]["tokens"]
        archive = Pretraining("masked_elmo", 0.01, seed).folder(folder) / "model.tar.gz"
        assert embedder["archive_file"] == str(archive) and embedder["requires_grad"] is False
    assert (folder / "verdicts.md").read_text() in again.stdout
    # Finished: the folder is the arena's, listed; the same command now asks for --force.
    manifest = json.loads((folder / ".maelmo-output.json").read_text())
    assert manifest["command"] == "maelmo-arena" and "verdicts.md" in manifest["files"]
    refused = subprocess.run(arena_command(folder), cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert refused.returncode == 2 and "--force to replace it" in refused.stderr
