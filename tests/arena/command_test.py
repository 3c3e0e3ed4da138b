"""
`maelmo maelmo-arena` end to end, as a user runs it: the tiny arena with GLUE (two arms, two seeds, the fixture
corpus and RTE), killed part-way and run again, to its table. Slow: about 40 runs of `allennlp train`.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from maelmo_plugin.arena.runs import FineTuning, Pretraining
from tests import PROJECT_ROOT

ARENA = "tests/fixtures/arena/tiny_glue.jsonnet"


def arena_command(folder) -> list[str]:
    return [sys.executable, "-m", "maelmo_cli.main", "maelmo-arena", ARENA, "-s", str(folder)]


def said(finished: subprocess.CompletedProcess) -> str:
    """What a stopped arena printed, and the end of the run's log it names, for a failure's message."""
    named = re.search(r"see (\S+\.log)", finished.stderr)
    log = Path(named.group(1)) if named else None
    tail = "\n".join(log.read_text().splitlines()[-40:]) if log and log.is_file() else ""
    return f"{finished.stderr[-3000:]}\n--- the end of {log}:\n{tail}"


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
    assert again.returncode == 0, said(again)
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
        run = FineTuning("masked_elmo", 0.01, seed, "rte", "fz", untrained=False)
        config = json.loads((run.folder(folder) / "config.json").read_text())
        embedder = config["model"]["text_field_embedder"]["token_embedders"]["tokens"]
        archive = Pretraining("masked_elmo", 0.01, seed).folder(folder) / "model.tar.gz"
        assert embedder["archive_file"] == str(archive) and embedder["requires_grad"] is False
    assert (folder / "verdicts.md").read_text() in again.stdout
    # Finished: the folder is the arena's, every file listed; the same command gives the same table, training
    # nothing, and a file of the user's in it is refused.
    manifest = json.loads((folder / ".maelmo-output.json").read_text())
    assert manifest["command"] == "maelmo-arena" and "verdicts.md" in manifest["files"]
    once_more = subprocess.run(arena_command(folder), cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert once_more.returncode == 0 and "maelmo-arena: training" not in once_more.stdout
    assert (folder / "verdicts.md").read_text() in once_more.stdout
    (folder / "notes.txt").write_text("mine")
    refused = subprocess.run(arena_command(folder), cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert refused.returncode == 2 and "notes.txt" in refused.stderr
    assert (folder / "notes.txt").read_text() == "mine"


@pytest.mark.slow
def test_torchruns_workers_share_an_arena_and_one_killed_is_restarted_to_the_table(tmp_path):
    """Two workers started by torchrun share the runs; one is killed while the arena runs, torchrun restarts the
    group, and the arena still ends with every run finished and its table."""
    import psutil

    folder = tmp_path / "arena"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    command += [
        "--max-restarts",
        "1",
        "-m",
        "maelmo_plugin",
        "maelmo-arena",
        ARENA.replace("_glue", ""),
        "-s",
    ]
    agent = subprocess.Popen([*command, str(folder)], cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not (folder / "logs").is_dir() and time.monotonic() < deadline:
        time.sleep(0.2)
    workers = [
        child
        for child in psutil.Process(agent.pid).children()
        if "maelmo_plugin" in child.cmdline() and "maelmo-arena" in child.cmdline()
    ]
    assert len(workers) == 2
    workers[0].kill()
    out, _ = agent.communicate(timeout=900)
    assert agent.returncode == 0, out[-3000:]
    table = json.loads((folder / "verdicts.json").read_text())
    assert [row["pairs"] for row in table["comparisons"]] == [2]
    for name in ("lstm-lr0.003-seed1", "lstm-lr0.01-seed1", "masked_elmo-lr0.01-seed2"):
        assert (folder / "pretrain" / name / "model.tar.gz").is_file()
    assert out.count("maelmo-arena: the table") == 1  # from the first worker only
    # The same as an arena no one killed: one worker, one thread on one core, as torchrun's workers run.
    alone = [sys.executable, "-m", "maelmo_cli.main", "maelmo-arena", ARENA.replace("_glue", "")]
    subprocess.run([*alone, "-s", str(tmp_path / "alone"), "--core", "0"], cwd=PROJECT_ROOT, check=True)
    assert json.loads((tmp_path / "alone" / "verdicts.json").read_text()) == table
