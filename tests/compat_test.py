"""One test per shim in maelmo_plugin/compat.py; each fails if its shim is removed."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from allennlp.common import Params
from allennlp.training.learning_rate_schedulers import LearningRateScheduler

from tests import PROJECT_ROOT


def test_checkpoints_holding_numpy_scalars_load_with_weights_only(tmp_path):
    """allennlp train -r reloads training_state_*.th, where metrics such as Spearman are numpy scalars."""
    path = tmp_path / "training_state.th"
    torch.save({"metric_tracker": {"best": np.float64(0.25), "count": np.int64(3)}}, path)
    state = torch.load(path, weights_only=True)
    assert state["metric_tracker"]["best"] == 0.25 and state["metric_tracker"]["count"] == 3


def test_reduce_on_plateau_scheduler_builds_and_reduces_the_learning_rate():
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=1.0)
    scheduler = LearningRateScheduler.from_params(
        optimizer=optimizer, params=Params({"type": "reduce_on_plateau", "patience": 0, "factor": 0.5})
    )
    for epoch in range(3):
        scheduler.step(metric=1.0)  # no improvement after the first epoch
    assert optimizer.param_groups[0]["lr"] == 0.25


def test_importing_the_plugin_is_silent_and_makes_no_network_call():
    probe = (
        "import socket\n"
        "def refuse(*args, **kwargs):\n"
        "    raise SystemExit('network call at import: %r' % (args,))\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "import maelmo_plugin\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONWARNINGS"}
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and result.stdout == ""


@pytest.mark.parametrize("name", ["MAELMO_TRAIN_PATH", "MAELMO_VOCAB", "MAELMO_CUDA_DEVICE"])
def test_config_variables_have_defaults_after_import(name):
    assert os.environ[name]
