"""
`torchrun -m maelmo_plugin train`: two gloo workers on this machine (`--standalone --nproc-per-node 2`), one of
them SIGKILLed in its second epoch, restarted by torchrun (`--max-restarts 1`) with the same command, end with
the weights of an uninterrupted torchrun run, bit for bit; a changed config over the run's folder is refused in
one line naming what changed, and the same command over a finished run leaves it as it is. Each run is a real torchrun, about half a minute: marked slow, and `.ci/run`
runs it on its own.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests import PROJECT_ROOT
from tests.training.distributed_test import ENV, SMALL, TIMEOUT, B, config

OVERRIDES = {
    "data_loader.batch_size": B,
    "trainer.num_epochs": 2,
    "trainer.checkpointer.save_every_num_batches": 4,
    "trainer.callbacks": [{"type": "maelmo_exact_resume"}, {"type": "maelmo_test_kill_switch"}],
}


def torchrun(config_file, directory, overrides=OVERRIDES, workers=2, **env) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        str(workers),
        "--max-restarts",
        "1",
        "-m",
        "maelmo_plugin",
        "train",
        config_file,
        "-s",
        str(directory),
        "--include-package",
        "tests.fixtures.kill_switch",
        "-o",
        json.dumps({**SMALL, **overrides}),
    ]
    return subprocess.run(
        command, cwd=PROJECT_ROOT, env={**ENV, **env}, capture_output=True, text=True, timeout=TIMEOUT
    )


def weights(directory):
    return torch.load(directory / "best.th", weights_only=True)


@pytest.mark.slow
def test_a_worker_killed_in_its_second_epoch_is_restarted_to_the_uninterrupted_weights(tmp_path):
    config_file = config(tmp_path)
    uninterrupted = torchrun(config_file, tmp_path / "uninterrupted")
    assert uninterrupted.returncode == 0, uninterrupted.stderr[-3000:]
    restarted = torchrun(
        config_file, tmp_path / "restarted", MAELMO_TEST_KILL_AT="1,6", MAELMO_TEST_KILL_RANK="1"
    )
    assert restarted.returncode == 0, restarted.stderr[-3000:]
    assert "exitcode: -9" in restarted.stdout + restarted.stderr  # the kill, which torchrun's agent saw
    assert "Continuing the run in" in (tmp_path / "restarted" / "out_worker0.log").read_text()
    expected, actual = weights(tmp_path / "uninterrupted"), weights(tmp_path / "restarted")
    assert expected.keys() == actual.keys()
    assert all(torch.equal(expected[name], actual[name]) for name in expected)
    assert (tmp_path / "restarted" / "model.tar.gz").is_file()

    changed = torchrun(config_file, tmp_path / "restarted", {**OVERRIDES, "trainer.num_epochs": 3})
    assert changed.returncode != 0
    refusal = (
        f"maelmo: error: {tmp_path / 'restarted'} holds a run of another config (trainer.num_epochs: 2 "
        f"then, 3 now): give another -s, or -f to replace it."
    )
    # Once per attempt, from the first worker only: torch's agent retries any failed attempt (--max-restarts 1
    # here), and has no exit status that a worker could give to be left alone.
    assert (changed.stdout + changed.stderr).count(refusal) == 2

    # The same command over the finished run leaves it as it is: its archive and final metrics stay.
    finished = {
        name: (tmp_path / "restarted" / name).read_bytes() for name in ("model.tar.gz", "metrics.json")
    }
    again = torchrun(config_file, tmp_path / "restarted")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "holds a finished run of this config" in again.stderr
    assert {name: (tmp_path / "restarted" / name).read_bytes() for name in finished} == finished


@pytest.mark.slow
def test_one_worker_trains_as_allennlp_train_does(tmp_path):
    # One GPU of a node, or a Slurm recipe run with one task: AllenNLP's trainer refuses "distributed" training
    # on one device, so a world of one trains as a plain run, in the process group torchrun made.
    overrides = {**OVERRIDES, "trainer.num_epochs": 1}
    alone = torchrun(config(tmp_path), tmp_path / "alone", overrides, workers=1)
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert (tmp_path / "alone" / "model.tar.gz").is_file()


@pytest.mark.slow
def test_the_maelmo_launcher_trains_and_refuses_before_any_worker_starts(tmp_path):
    """`maelmo maelmo-torchrun` (`training/launcher.py`): the same run, and a changed config is one line, once."""
    maelmo = str(Path(sys.executable).with_name("maelmo"))
    overrides = json.dumps({**SMALL, **OVERRIDES, "trainer.num_epochs": 1})
    command = [maelmo, "maelmo-torchrun", "--standalone", "--nproc-per-node", "2", "--max-restarts", "1"]
    command += [
        "train",
        config(tmp_path),
        "-s",
        str(tmp_path / "run"),
        "--include-package",
        "tests.fixtures.kill_switch",
    ]

    def run(options):
        return subprocess.run(
            [*command, "-o", options],
            cwd=PROJECT_ROOT,
            env=ENV,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )

    trained = run(overrides)
    assert trained.returncode == 0, trained.stderr[-3000:]
    assert (tmp_path / "run" / "model.tar.gz").is_file() and "Trained" in trained.stdout
    changed = run(json.dumps({**SMALL, **OVERRIDES, "trainer.num_epochs": 3}))
    assert changed.returncode == 2
    assert changed.stderr.strip().splitlines()[-1].startswith("maelmo maelmo-torchrun: error: ")
    assert "holds a run of another config (trainer.num_epochs: 1 then, 3 now)" in changed.stderr
    assert "Traceback" not in changed.stderr and "torch.distributed.elastic" not in changed.stderr
