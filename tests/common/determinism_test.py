import os

import pytest
import torch

from maelmo_plugin import determinism


@pytest.fixture
def restore_torch_settings():
    before = (torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
    yield
    torch.use_deterministic_algorithms(before[0])
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = before[1:]


def test_maelmo_deterministic_asks_torch_for_deterministic_kernels(monkeypatch, restore_torch_settings):
    monkeypatch.setenv("MAELMO_DETERMINISTIC", "1")
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    determinism.apply()
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"


def test_by_default_torch_keeps_its_fast_kernels(monkeypatch, restore_torch_settings):
    monkeypatch.delenv("MAELMO_DETERMINISTIC", raising=False)
    torch.use_deterministic_algorithms(False)
    determinism.apply()
    assert not torch.are_deterministic_algorithms_enabled()
