import os

import pytest
import torch
from allennlp.common import Params
from allennlp.training.callbacks.callback import TrainerCallback

from maelmo_plugin.training.determinism import DeterministicCallback
from tests import PROJECT_ROOT


@pytest.fixture
def restore_torch_settings():
    before = (
        torch.are_deterministic_algorithms_enabled(),
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
    )
    yield
    torch.use_deterministic_algorithms(before[0])
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = before[1:]


def test_the_callback_asks_torch_for_deterministic_kernels(tmp_path, monkeypatch, restore_torch_settings):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    torch.use_deterministic_algorithms(False)
    callback = TrainerCallback.from_params(
        Params({"type": "maelmo_deterministic"}), serialization_dir=str(tmp_path)
    )
    assert isinstance(callback, DeterministicCallback)
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"


@pytest.mark.parametrize("deterministic", [False, True])
def test_settings_deterministic_adds_the_callback(tmp_path, deterministic):
    variant = tmp_path / "variant.jsonnet"
    small = PROJECT_ROOT / "training_config" / "lm" / "pretrain_small.jsonnet"
    variant.write_text(
        f'(import "{small}") + {{ settings+:: {{ deterministic: {str(deterministic).lower()} }} }}'
    )
    callbacks = Params.from_file(str(variant)).as_dict()["trainer"]["callbacks"]
    assert ({"type": "maelmo_deterministic"} in callbacks) == deterministic
