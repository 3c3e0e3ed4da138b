"""
What both CPU recurrences compute with (`cpu.py`, training, and `inference.py`): matrix products whose weight
oneDNN packs once, and the gates' functions.

Like `cpu.py`, this file imports only torch: the Hugging Face export ships them as one file
(`standalone.py`).
"""

from collections.abc import Callable

import torch

# Matrix products with a weight packed once by oneDNN, for weights that multiply many inputs in a row: the
# LSTM's per-step products (`packed_linear`, no autograd: the recurrence computes its own gradients) and
# its input product over all time steps (`linear`, with autograd).
#
# On a CPU, torch's `mm` (MKL) runs a (16 x 256) @ (256 x 8192) product at about a third of the core's
# peak, because it re-packs the large weight on every call. oneDNN can pack the weight once into its blocked
# layout; the packed products then run near the peak (83 against 29 GFLOP/s for that shape on this project's
# AVX-512 machine; `benchmarks/cpu_kernels.py` measures every product the LSTM makes). torch exposes this
# only through the private `mkldnn` operators its own inductor uses for frozen CPU inference, so they are
# used when present and usable, and everything else (another device, dtype or torch build, or
# `torch.backends.mkldnn.enabled = False`) falls back to `torch.nn.functional.linear`, which gives the same
# result up to float rounding.

Linear = Callable[[torch.Tensor], torch.Tensor]

# Packing pays only when the packed weight is reused enough: packing a weight costs about as much as a
# product of ~100 rows with it, and for a single row the product costs the same packed or not, since it is
# bound by reading the weight (a batch-1 representation dump was slower packed).
MIN_ROWS_PER_CALL = 8
MIN_TOTAL_ROWS = 256


def onednn_can_pack(weight: torch.Tensor) -> bool:
    return (
        weight.device.type == "cpu"
        and weight.dtype == torch.float32
        and torch.backends.mkldnn.is_available()
        and bool(torch.backends.mkldnn.enabled)  # a flag the stubs type as its descriptor
        and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
        and hasattr(torch.ops.mkldnn, "_linear_pointwise")
    )


def packed_linear(weight: torch.Tensor, rows: int, calls: int = 1) -> Linear:
    """
    Returns a function computing `inputs @ weight^T` (inputs (rows, in_features), weight (out_features,
    in_features)), with the weight packed once for all its calls when that pays. `rows` (per call) and
    `calls` are hints for that choice and for the packed layout; any number of rows gives a correct result.
    """
    weight = weight.detach()
    worth_packing = rows >= MIN_ROWS_PER_CALL and rows * calls >= MIN_TOTAL_ROWS
    if not (worth_packing and onednn_can_pack(weight)):
        return lambda inputs: torch.nn.functional.linear(inputs, weight)
    packed = torch.ops.mkldnn._reorder_linear_weight(weight.contiguous(), rows)
    return lambda inputs: torch.ops.mkldnn._linear_pointwise(
        inputs.contiguous(), packed, None, "none", [], ""
    )


class _PackedLinearFunction(torch.autograd.Function):
    """`inputs @ weight^T + bias` with both products of `inputs`' side (forward and input gradient) packed."""

    @staticmethod
    def forward(ctx, inputs, weight, bias):
        ctx.save_for_backward(inputs, weight)
        flat_inputs = inputs.reshape(-1, inputs.size(-1))
        outputs = packed_linear(weight, flat_inputs.size(0))(flat_inputs).add_(bias)
        return outputs.view(*inputs.shape[:-1], weight.size(0))

    @staticmethod
    def backward(ctx, grad_outputs):
        inputs, weight = ctx.saved_tensors
        flat_grad = grad_outputs.reshape(-1, grad_outputs.size(-1))
        grad_inputs = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_inputs = packed_linear(weight.t(), flat_grad.size(0))(flat_grad).view(inputs.shape)
        if ctx.needs_input_grad[1]:
            # An (out x rows) @ (rows x in) product with a large inner dimension: MKL runs it near the peak.
            grad_weight = flat_grad.t().mm(inputs.reshape(-1, inputs.size(-1)))
        if ctx.needs_input_grad[2]:
            grad_bias = flat_grad.sum(0)
        return grad_inputs, grad_weight, grad_bias


def linear(inputs: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """
    `torch.nn.functional.linear(inputs, weight, bias)` with gradients, through oneDNN's packed products
    when they are usable (see the module's docstring); otherwise it is `functional.linear` itself.
    """
    rows = inputs.numel() // inputs.size(-1)
    if not (rows >= MIN_TOTAL_ROWS and onednn_can_pack(weight)):
        return torch.nn.functional.linear(inputs, weight, bias)
    return _PackedLinearFunction.apply(inputs, weight, bias)


# The gates' functions, in place where a step's buffers allow it.


def tanh_into(inputs: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """
    tanh, written into `out`. Not 2 sigmoid(2x) - 1, although torch's CPU sigmoid is 2 to 3.6 times as fast
    as its tanh (`benchmarks/cpu_kernels.py` times both): near 0 that formula cancels, with an absolute error
    of about 1e-7 that is 100% of a small value, and a LayerNorm after a direction with small states (an
    untrained or lightly trained model) scales it up to 3e-5 in the representations, which then change with
    the padding of a row's batch and miss the ONNX and Hugging Face exports' 1e-5.
    """
    return torch.tanh(inputs, out=out)


def sigmoid_except_candidate(step_gates: torch.Tensor, cells: int) -> None:
    """Applies the sigmoid in place to the input, forget and output gates; the candidate is left as is."""
    torch.sigmoid_(step_gates[..., : 2 * cells])
    torch.sigmoid_(step_gates[..., 3 * cells :])
