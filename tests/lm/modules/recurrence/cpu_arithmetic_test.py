"""The packed products (oneDNN) both CPU recurrences run."""

import pytest
import torch

from maelmo_plugin.lm.modules.recurrence import cpu_arithmetic
from maelmo_plugin.lm.modules.recurrence.cpu_arithmetic import linear, packed_linear


@pytest.mark.parametrize("rows", [1, 16, 40])
def test_packed_products_equal_functional_linear(onednn_products, rows):
    torch.manual_seed(0)
    weight, inputs = torch.randn(24, 12), torch.randn(rows, 12)
    product = packed_linear(weight, rows=16)  # packed for 16 rows, used with any number
    torch.testing.assert_close(product(inputs), inputs @ weight.t(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        product(inputs.t().contiguous().t()), inputs @ weight.t(), atol=1e-5, rtol=1e-5
    )
    assert len(onednn_products) == 2


def test_small_or_disabled_products_fall_back_to_functional_linear(onednn_products, monkeypatch):
    weight, inputs = torch.randn(24, 12), torch.randn(4, 12)
    with monkeypatch.context() as patch:
        patch.setattr(torch.backends.mkldnn, "enabled", False)
        torch.testing.assert_close(packed_linear(weight, rows=4)(inputs), inputs @ weight.t())
    monkeypatch.setattr(cpu_arithmetic, "MIN_ROWS_PER_CALL", 8)
    torch.testing.assert_close(packed_linear(weight, rows=4, calls=100)(inputs), inputs @ weight.t())
    torch.testing.assert_close(
        packed_linear(weight.double(), rows=4)(inputs.double()), inputs.double() @ weight.double().t()
    )
    assert onednn_products == []


@pytest.mark.parametrize("onednn", [True, False], ids=["onednn", "fallback"])
def test_linear_values_and_gradients_equal_functional_linear(onednn_products, onednn, monkeypatch):
    torch.manual_seed(0)
    monkeypatch.setattr(torch.backends.mkldnn, "enabled", onednn)
    leaves = [
        torch.randn(5, 4, 12, requires_grad=True),
        torch.randn(24, 12, requires_grad=True),
        torch.randn(24, requires_grad=True),
    ]
    upstream = torch.randn(5, 4, 24)
    results = []
    for function in (linear, torch.nn.functional.linear):
        outputs = function(*leaves)
        grads = torch.autograd.grad((outputs * upstream).sum(), leaves)
        results.append([outputs, *grads])
    for actual, expected in zip(*results):
        torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5)
    assert len(onednn_products) == (2 if onednn else 0)  # the forward product and the input gradient's


def test_linear_skips_gradients_nobody_asked_for():
    inputs, weight, bias = torch.randn(3, 4), torch.randn(5, 4, requires_grad=True), torch.randn(5)
    (grad_weight,) = torch.autograd.grad(linear(inputs, weight, bias).sum(), [weight])
    torch.testing.assert_close(grad_weight, torch.ones(3, 5).t() @ inputs)


def test_the_pinned_torch_provides_onednn_packing():
    """
    The CPU recurrence's speed rests on torch's private mkldnn operators (docs/stack.md): a torch upgrade
    that drops them must show up here, not only as a slower benchmark.
    """
    if not torch.backends.mkldnn.is_available():
        pytest.skip("this torch build has no oneDNN at all")
    assert cpu_arithmetic.onednn_can_pack(torch.zeros(2, 2))
