"""
Reduced-precision products for embedding with a Masked ELMo encoder on a CPU: the `precision` option of the
`maelmo_representations` predictor, `MaskedElmo.embed` and `allennlp maelmo-embed`.

    "fp32"  float32 throughout (the default)
    "int8"  the LSTM's matrix products dynamically quantized, with torch's own fbgemm kernels: each weight
            int8 per output row (symmetric), quantized and packed once; each product's input quantized
            per tensor at every call; int32 accumulation, float32 out
    "bf16"  the LSTM's matrix products in bfloat16 (weights converted once, inputs at every call), their
            outputs back in float32
    "auto"  "int8": it embedded faster than "bf16" on every CPU measured, those that multiply bfloat16
            natively included (AVX512_BF16, AMX; docs/performance.md); "bf16" is the more accurate

Only the products of the recurrence change (the input products of all steps, and each step's recurrent
and projection products), which are nearly all of the arithmetic. The word-piece embedding, the gate
nonlinearities, the cell state, LayerNorm and the skip connections stay in float32. Both run in the
inference recurrence (`inference.py`): reduced precision is for embedding, never for training.

Accuracy (docs/performance.md): an int8 product's input is quantized with one scale for all the rows of
its batch, so a sentence's vectors depend slightly on the other sentences of its batch, within the
tolerance that `tests/lm/modules/recurrence/reduced_precision_test.py` documents, and on nothing else.
"""

import warnings
from typing import Any, Optional

import torch
from allennlp.common.checks import ConfigurationError

from maelmo_declarations.options import PRECISIONS  # the choices of --precision
from maelmo_plugin.lm.modules.recurrence.inference import (
    DIRECTION_SUFFIXES,
    LayerProducts,
    ProductsFactory,
    converted_once,
    direction_weights,
    float_products,
)

# fbgemm multiplies 8-bit inputs by 8-bit weights in pairs summed into 16 bits (AVX2's vpmaddubsw), which
# can saturate unless the inputs use 7 bits: torch's own dynamic quantization does the same on x86.
REDUCE_RANGE = True


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX512_BF16 or AMX), as torch's CPU checks say."""
    avx512_bf16 = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
    amx_tile = getattr(torch.cpu, "_is_amx_tile_supported", None)
    if avx512_bf16 is not None and amx_tile is not None:
        return bool(avx512_bf16() or amx_tile())
    try:  # an older torch: the kernel's flags
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            flags = set(cpuinfo.read().split())
    except OSError:
        return False
    return bool(flags & {"avx512_bf16", "amx_bf16"})


def resolve_precision(precision: Any, refusal: Optional[str]) -> str:
    """
    "fp32", "int8" or "bf16" for the option `precision`; "auto" becomes "int8" (see the module's
    docstring), or "fp32" where the model cannot reduce its precision. `refusal` says why it cannot (from
    `MaskedElmoEncoder.reduced_precision_refusal`), or is None when it can.
    """
    if precision not in PRECISIONS:
        raise ConfigurationError(
            f"precision must be one of {', '.join(repr(name) for name in PRECISIONS)}, got {precision!r}."
        )
    if precision == "auto":
        return "fp32" if refusal else "int8"
    if precision != "fp32" and refusal:
        raise ConfigurationError(
            f"precision {precision!r} reduces the products of a Masked ELMo encoder (maelmo_masked_elmo_lm, "
            f"fused cell) on a CPU, but {refusal}: use 'fp32' (or 'auto', which falls back to it)."
        )
    return precision


def int8_products(lstm: torch.nn.LSTM, batch_size: int, num_steps: int) -> LayerProducts:
    """The layer's products dynamically quantized to int8 (fbgemm), weights converted once (see above)."""
    packed = converted_once(lstm, "int8", _int8_weights)
    operator = torch.ops.quantized.linear_dynamic.default

    def product(weights: Any):
        def run(rows: torch.Tensor) -> torch.Tensor:
            # Without this, each call looks for `__torch_function__` on the packed weights, a TorchScript
            # object whose failed attribute look-up throws a C++ exception: 20 of the 30 microseconds a
            # small product took (a batch-1 step makes four).
            with torch._C.DisableTorchFunction():
                return operator(rows.contiguous(), weights, REDUCE_RANGE)

        return run

    return LayerProducts(*([product(weights) for weights in kind] for kind in packed))


def bf16_products(lstm: torch.nn.LSTM, batch_size: int, num_steps: int) -> LayerProducts:
    """The layer's products in bfloat16, float32 out, weights converted once."""
    weights_ih, biases, weights_hh, weights_hr = converted_once(lstm, "bf16", _bf16_weights)

    def product(weight: torch.Tensor, bias: Optional[torch.Tensor] = None):
        def run(rows: torch.Tensor) -> torch.Tensor:
            outputs = torch.nn.functional.linear(rows.to(torch.bfloat16), weight).float()
            return outputs if bias is None else outputs.add_(bias)

        return run

    return LayerProducts(
        [product(weight, bias) for weight, bias in zip(weights_ih, biases)],
        [product(weight) for weight in weights_hh],
        [product(weight) for weight in weights_hr],
    )


PRODUCTS: dict[str, ProductsFactory] = {"fp32": float_products, "int8": int8_products, "bf16": bf16_products}


def _int8_weights(lstm: torch.nn.LSTM) -> tuple[list[Any], list[Any], list[Any]]:
    """fbgemm's packed int8 weights (input products with their bias), per direction."""
    inputs, recurrent, projection = [], [], []
    for suffix in DIRECTION_SUFFIXES:
        weight_ih, bias, weight_hh, weight_hr = direction_weights(lstm, suffix)
        inputs.append(torch.ops.quantized.linear_prepack(_quantized(weight_ih), bias.float()))
        recurrent.append(torch.ops.quantized.linear_prepack(_quantized(weight_hh), None))
        projection.append(torch.ops.quantized.linear_prepack(_quantized(weight_hr), None))
    return inputs, recurrent, projection


def _quantized(weight: torch.Tensor) -> torch.Tensor:
    """`weight` (out, in) as int8, symmetric, one scale per output row."""
    weight = weight.float().contiguous()
    scales = (weight.abs().amax(dim=1) / 127).clamp(min=1e-12).double()
    zero_points = torch.zeros(weight.size(0), dtype=torch.long)
    with warnings.catch_warnings():
        # torch 2.14 deprecates creating quantized tensors (pytorch#184982) but has no other way into its
        # fbgemm int8 kernels, the fast ones on a CPU (torch._int_mm runs at under 1 GFLOP/s here).
        warnings.filterwarnings("ignore", message=r"torch\.quantize_per_tensor, torch\.quantize_per_channel")
        return torch.quantize_per_channel(weight, scales, zero_points, 0, torch.qint8)


def _bf16_weights(lstm: torch.nn.LSTM) -> tuple[list[torch.Tensor], ...]:
    """(W_ih, b_ih + b_hh, W_hh, W_hr) per direction, the weights in bfloat16, the bias in float32."""
    converted: tuple[list[torch.Tensor], ...] = ([], [], [], [])
    for suffix in DIRECTION_SUFFIXES:
        weight_ih, bias, weight_hh, weight_hr = direction_weights(lstm, suffix)
        converted[0].append(weight_ih.to(torch.bfloat16).contiguous())
        converted[1].append(bias.float())
        converted[2].append(weight_hh.to(torch.bfloat16).contiguous())
        converted[3].append(weight_hr.to(torch.bfloat16).contiguous())
    return converted
