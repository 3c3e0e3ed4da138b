"""
`maelmo maelmo-torchrun` (`training/launcher.py`): what would refuse the run in its workers is refused before any
worker starts, in one line and not retried (under plain torchrun, each refusal was torchrun's 45-line traceback,
restarted `--max-restarts` times); a run that passes goes to torch's own elastic launcher, its options passed
through. `torch.distributed.run.run` is replaced here by a recorder: the real launch is `torchrun_test.py`'s.
"""

import json
import re
from unittest import mock

import pytest
import torch
from allennlp.common import Params

from maelmo_plugin.training.torchrun import WORLD_FILE
from tests import file_tree, run_allennlp_in_process


@pytest.fixture
def launches():
    """The argument lists torch's launcher was called with (it starts nothing here)."""
    calls = []
    with mock.patch("torch.distributed.run.run", side_effect=lambda args: calls.append(args)):
        yield calls


def config(folder, **fields):
    params = {"model": {"type": "maelmo_masked_elmo_lm"}, "trainer": {"num_epochs": 2}, **fields}
    (folder / "config.jsonnet").write_text(json.dumps(params))
    return str(folder / "config.jsonnet")


def run_folder(folder, params_file, world_size=None, finished=False):
    """The folder a run left: its config, a checkpoint, and its world size and archive when given."""
    folder.mkdir()
    Params.from_file(params_file).to_file(str(folder / "config.json"))
    (folder / "model_state_e0_b4.th").write_bytes(b"weights")
    if world_size:
        (folder / WORLD_FILE).write_text(json.dumps({"world_size": world_size}))
    if finished:
        (folder / "model.tar.gz").write_bytes(b"the archive")
    return str(folder)


def launch(*argv):
    run_allennlp_in_process("maelmo-torchrun", "--standalone", *argv)


def refused(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exit_info:
        launch(*argv)
    error = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in error, error
    return error.strip().splitlines()[-1]


def test_a_run_goes_to_torchs_launcher_with_its_options(tmp_path, launches, capsys):
    params = config(tmp_path)
    launch("--nproc-per-node", "2", "--max-restarts", "3", "train", params, "-s", str(tmp_path / "run"))
    (args,) = launches
    assert (args.standalone, args.nproc_per_node, args.max_restarts, args.module) == (True, "2", 3, True)
    assert args.training_script == "maelmo_plugin"
    assert args.training_script_args == ["train", params, "-s", str(tmp_path / "run")]
    assert "Trained" in capsys.readouterr().out


@pytest.mark.parametrize(
    "case, message",
    [
        ("another config", r"run holds a run of another config \(trainer.num_epochs: 2 then, 3 now\)"),
        ("another world size", "was trained by 4 workers and this run has 2: exact resume"),
        ("a folder of the user's", "exists and holds no run"),
        ("-f over a folder of the user's", "allennlp train did not write .*-f replaces only"),
        ("-s a file", r"The serialization directory \(-s\) .* is a file"),
        ("a distributed block", "remove the config's distributed block"),
        ("an evaluation block", "evaluation block is not run"),
        ("elastic sizes", "--nnodes 1:2: give the number of machines"),
        ("no worker", "--nproc-per-node 0: give a count from 1"),
        pytest.param(
            "gpu workers without a GPU",
            "--nproc-per-node gpu: Cuda is not available. Give a count, or cpu.",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU"),
        ),
        ("a control character in -s", r"holds a control character \(a newline, a tab...\)"),
        ("no train", "give torchrun's options, then `train CONFIG -s DIR`"),
    ],
)
def test_what_would_refuse_the_run_is_refused_before_any_worker_starts(
    tmp_path, launches, capsys, case, message
):
    params, run, options, train = config(tmp_path), str(tmp_path / "run"), ["--nproc-per-node", "2"], []
    if case == "another config":
        run_folder(tmp_path / "run", params, world_size=2)
        train = ["-o", json.dumps({"trainer.num_epochs": 3})]
    elif case == "another world size":
        run_folder(tmp_path / "run", params, world_size=4)
    elif case.endswith("folder of the user's"):
        (tmp_path / "run").mkdir()
        (tmp_path / "run" / "thesis.txt").write_text("mine")
        train = ["-f"] if case.startswith("-f") else []
    elif case == "-s a file":
        (tmp_path / "run").write_text("mine")
    elif case == "a distributed block":
        params = config(tmp_path, distributed={"cuda_devices": [0, 1]})
    elif case == "an evaluation block":
        params = config(tmp_path, evaluation={"type": "simple"})
    elif case == "elastic sizes":
        options = ["--nnodes", "1:2"]
    elif case == "no worker":
        options = ["--nproc-per-node", "0"]
    elif case == "gpu workers without a GPU":
        options = ["--nproc-per-node", "gpu"]
    elif case == "a control character in -s":
        run = str(tmp_path / "r\nun")
    before = file_tree(tmp_path)
    argv = [*options, "train", params, "-s", run, *train] if case != "no train" else options
    line = refused(capsys, *argv)
    assert re.search(message, line), line
    assert launches == [] and file_tree(tmp_path) == before


def test_a_finished_run_is_left_as_it_is_and_nothing_starts(tmp_path, launches, capsys):
    params = config(tmp_path)
    run_folder(tmp_path / "run", params, world_size=2, finished=True)
    before = file_tree(tmp_path)
    launch("--nproc-per-node", "2", "train", params, "-s", str(tmp_path / "run"))
    assert "holds a finished run of this config" in capsys.readouterr().err
    assert launches == [] and file_tree(tmp_path) == before


def test_the_same_command_resumes_an_unfinished_run(tmp_path, launches, capsys):
    params = config(tmp_path)
    run_folder(tmp_path / "run", params, world_size=2)
    launch("--nproc-per-node", "2", "train", params, "-s", str(tmp_path / "run"))
    assert len(launches) == 1
