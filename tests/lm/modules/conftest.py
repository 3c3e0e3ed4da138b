import pytest
import torch

from maelmo_plugin.lm.modules.recurrence import cpu_arithmetic


@pytest.fixture
def onednn_products(monkeypatch):
    """
    Packs every weight, however few rows it multiplies (the tests' tensors are far below the thresholds
    at which packing pays), and counts the packed products, so a test can show it ran them.
    """
    if not cpu_arithmetic.onednn_can_pack(torch.zeros(1)):
        pytest.skip("this torch build has no usable oneDNN packed linear")
    monkeypatch.setattr(cpu_arithmetic, "MIN_ROWS_PER_CALL", 1)
    monkeypatch.setattr(cpu_arithmetic, "MIN_TOTAL_ROWS", 1)
    calls = []
    original = torch.ops.mkldnn._linear_pointwise

    def counted(*args):
        calls.append(args[0].shape)
        return original(*args)

    monkeypatch.setattr(torch.ops.mkldnn, "_linear_pointwise", counted)
    return calls


@pytest.fixture
def full_float32(monkeypatch):
    """TF32 off for cuBLAS and cuDNN alike: a GPU comparison is of two computations, not of TF32's rounding."""
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
