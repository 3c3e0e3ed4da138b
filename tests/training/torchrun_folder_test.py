"""
What a torchrun worker checks before it trains (`training/torchrun.py`), without launching torchrun: its
environment (some of torchrun's variables without the others, a rank beyond the world), and the run's folder
(another world size over a plain `allennlp train` run's folder, a finished run). `torchrun_test.py` launches
the real thing (slow).
"""

import json
import os
import subprocess
import sys

import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError

from maelmo_declarations.refusals import Refusal
from maelmo_plugin.training.torchrun import WORLD_FILE, _prepare_on_primary, train, under_torchrun
from tests import PROJECT_ROOT

WORKER = {
    "RANK": "0",
    "LOCAL_RANK": "0",
    "WORLD_SIZE": "2",
    "LOCAL_WORLD_SIZE": "2",
    "MASTER_ADDR": "127.0.0.1",
    "MASTER_PORT": "29500",
    "TORCHELASTIC_RUN_ID": "none",
}


def test_a_torchrun_worker_and_a_plain_process_are_told_apart():
    assert under_torchrun(WORKER)
    assert not under_torchrun({"PATH": "/usr/bin"})
    # Clusters export these for every job: alone they do not make a worker.
    assert not under_torchrun({"MASTER_ADDR": "node1", "MASTER_PORT": "29500"})


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            {"WORLD_SIZE": None},
            "RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, TORCHELASTIC_RUN_ID are set and WORLD_SIZE not",
        ),
        ({"RANK": "2"}, "RANK=2, WORLD_SIZE=2.*a rank must be below its world size"),
        ({"LOCAL_RANK": "5"}, "a rank must be below its world size"),
        ({"LOCAL_WORLD_SIZE": "3"}, "a rank must be below its world size"),
        ({"RANK": "٣"}, "RANK='٣' is not a count"),
        ({"WORLD_SIZE": "-1"}, "WORLD_SIZE='-1' is not a count"),
        ({"WORLD_SIZE": "10000000000000"}, "is not a count"),
    ],
)
def test_a_partial_or_inconsistent_environment_is_refused_naming_the_variable(changes, message):
    environ = {name: value for name, value in {**WORKER, **changes}.items() if value is not None}
    with pytest.raises(ConfigurationError, match=message):
        under_torchrun(environ)


def test_rank_alone_is_refused_not_trained_as_one_process():
    with pytest.raises(ConfigurationError, match="RANK is set and .*WORLD_SIZE.* not: start the workers"):
        under_torchrun({"RANK": "1"})


def test_the_command_refuses_rank_without_world_size_in_one_line(tmp_path):
    environ = {**os.environ, "RANK": "1"}
    environ.pop("WORLD_SIZE", None)
    result = subprocess.run(
        [sys.executable, "-m", "maelmo_plugin", "train", "config.jsonnet", "-s", str(tmp_path / "run")],
        cwd=PROJECT_ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("maelmo: error: RANK is set and")
    assert not (tmp_path / "run").exists()


def _plain_run(directory, params: Params, finished: bool = False):
    """The folder `allennlp train` leaves: its config, a checkpoint, and when finished its archive."""
    directory.mkdir()
    params.to_file(str(directory / "config.json"))
    (directory / "model_state_e0_b4.th").write_bytes(b"weights")
    if finished:
        (directory / "model.tar.gz").write_bytes(b"the archive")
        (directory / "metrics.json").write_text(json.dumps({"best_epoch": 0, "training_loss": 1.5}))


def _params():
    return Params({"model": {"type": "maelmo_masked_elmo_lm"}, "trainer": {"num_epochs": 2}})


def test_another_world_size_over_a_plain_allennlp_train_folder_is_refused(tmp_path):
    _plain_run(tmp_path / "run", _params())
    with pytest.raises(Refusal, match="trained by 1 worker and this run has 2: exact resume"):
        _prepare_on_primary(_params(), str(tmp_path / "run"), False, world_size=2)
    assert _prepare_on_primary(_params(), str(tmp_path / "run"), False, world_size=1) == "resume"
    assert json.loads((tmp_path / "run" / WORLD_FILE).read_text()) == {"world_size": 1}


def test_a_finished_run_is_left_as_it_is(tmp_path):
    _plain_run(tmp_path / "run", _params(), finished=True)
    before = {path.name: path.read_bytes() for path in (tmp_path / "run").iterdir()}
    assert _prepare_on_primary(_params(), str(tmp_path / "run"), False, world_size=2) == "finished"
    assert {path.name: path.read_bytes() for path in (tmp_path / "run").iterdir()} == before


def test_a_new_run_records_its_meta_json_as_allennlp_train_does(tmp_path):
    # archive_model puts meta.json (the versions that trained it) in model.tar.gz when the folder has it.
    assert _prepare_on_primary(_params(), str(tmp_path / "run"), False, world_size=2) == "new"
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["version"] and "maelmo" not in meta["version"]


def test_an_evaluation_block_is_refused_not_dropped(tmp_path):
    params = _params()
    params["evaluation"] = {"type": "simple"}
    with pytest.raises(Refusal, match="evaluation block .* `allennlp evaluate`"):
        train(params, str(tmp_path / "run"))
    assert not (tmp_path / "run").exists()
