"""
The CPU recurrence for inference: what `cpu_bidirectional_lstm` computes, forward only, with no padding
computed, and with its matrix products supplied by the caller (float32, or the reduced precisions of
`reduced_precision.py`).

Why a second loop: the training recurrence keeps every step's gates, cell states and tanh(c) for its
backward pass (at the paper's size, 4 x 4096 gates x 4 bytes per token and direction, written and never
read when nothing needs gradients), and runs every row to the batch's longest length. Here:

* nothing is kept but the running (h, c) of each row and the outputs;
* the rows are put in order of decreasing length, so that at step t the rows still running are the first
  n_t, and every product of step t multiplies those n_t rows only: as torch's packed sequences, the
  padding is never computed, in the input products either (they read the real positions only);

          t:   0 1 2 3 4            n_t: 5 5 4 2 1
    row 0     a b c d e   length 5
    row 1     a b c d _   length 4      rows [0, n_t) run at step t; a row's state is not touched
    row 2     a b c _ _   length 3      after its last step, so the buffers end holding each row's
    row 3     a b _ _ _   length 2      final (h, c)
    row 4     a b _ _ _   length 2

* the outputs are put back in the input's row order.

The arithmetic of a step is the training recurrence's (`cpu.py`; both use `cpu_arithmetic.py`'s gate
functions), so in float32 the two agree to float rounding, and in float64 to 1e-12 (tested).
"""

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Optional

import torch
from torch.utils.weak import WeakIdKeyDictionary

from maelmo_plugin.lm.modules.recurrence import cpu, cpu_arithmetic
from maelmo_plugin.lm.modules.recurrence.cpu_arithmetic import Linear, sigmoid_except_candidate, tanh_into
from maelmo_plugin.lm.modules.recurrence.layer import LayerState, reversal_index, reverse_in_time

DIRECTION_SUFFIXES = ("", "_reverse")
# The number of rows oneDNN lays a packed weight out for. Measured (AVX2, one thread): any hint from 32 up
# gives the same speed from 8 to 800 rows, so one packed copy serves every batch size.
PACKING_HINT = 32
# oneDNN builds a packed product's kernel for each number of rows it meets and keeps it in its primitive
# cache: about 0.55 MB each (measured, whatever the weight's size), up to the cache's 1,024 entries. A step's
# products meet at most batch_size numbers of rows, but an input product's rows are the real positions of a
# chunk, a new number almost every batch: in bulk embedding the cache grew by about 0.5 MB a batch (up to
# 0.4 GB), and the free space of the heap, fragmented around its entries, faster. So the input products run
# on rows padded to a multiple of this: INFERENCE_CHUNK_ROWS / ROW_BUCKET (16) shapes at most, for batches up
# to 1,024 rows, for under ROW_BUCKET rows of extra work per chunk. A row's product does not depend on how
# many rows there are (checked bit for bit, oneDNN 3.12 on an AVX2 CPU, from 1 to 1,088 rows at the
# Quickstart's size and at 84 of them at the paper's).
ROW_BUCKET = 64


class LayerProducts(NamedTuple):
    """
    The matrix products of one bidirectional layer, one function per direction (index 0 forward):
    `inputs` x -> x W_ih^T + b_ih + b_hh, called once with all real positions; `recurrent` h -> h W_hh^T and
    `projection` m -> m W_hr^T, called at every step with the rows still running.
    """

    inputs: Sequence[Linear]
    recurrent: Sequence[Linear]
    projection: Sequence[Linear]


# Makes a layer's products: (the nn.LSTM, rows per step, steps) -> LayerProducts. The sizes say which
# products pay for oneDNN's packed weights (see `packed_linear`); any number of rows gives a correct result.
ProductsFactory = Callable[[torch.nn.LSTM, int, int], LayerProducts]

# Per nn.LSTM and kind ("fp32", "int8", ...): its weights converted for the products (packed, quantized),
# with the identity and versions of the parameters they came from, so that a model's weights are converted
# once for all its batches, and again only after they change (training, load_state_dict). One copy per
# kind: at the paper's size, 330 MB for fp32's packed weights, a quarter of that for int8's.
_converted: WeakIdKeyDictionary = WeakIdKeyDictionary()


def converted_once(lstm: torch.nn.LSTM, kind: str, convert: Callable[[torch.nn.LSTM], Any]) -> Any:
    """`convert(lstm)`, cached per `lstm` and `kind` until its parameters change."""
    key = (torch.backends.quantized.engine, tuple((p.data_ptr(), p._version) for p in lstm.parameters()))
    cached = _converted.setdefault(lstm, {})
    if kind not in cached or cached[kind][0] != key:
        cached.pop(kind, None)  # the old copy goes before the new one is made
        cached[kind] = (key, convert(lstm))
    return cached[kind][1]


def direction_weights(lstm: torch.nn.LSTM, suffix: str) -> tuple[torch.Tensor, ...]:
    """(W_ih, b_ih + b_hh, W_hh, W_hr) of one direction of `lstm`, detached."""
    return (
        getattr(lstm, f"weight_ih_l0{suffix}").detach(),
        (getattr(lstm, f"bias_ih_l0{suffix}") + getattr(lstm, f"bias_hh_l0{suffix}")).detach(),
        getattr(lstm, f"weight_hh_l0{suffix}").detach(),
        getattr(lstm, f"weight_hr_l0{suffix}").detach(),
    )


def float_products(lstm: torch.nn.LSTM, batch_size: int, num_steps: int) -> LayerProducts:
    """
    The products in the weights' own dtype: oneDNN's packed products where the training recurrence would
    pack (`cpu_arithmetic.packed_linear`'s thresholds), with weights packed once for all batches
    (`converted_once`), else `torch.nn.functional.linear`.
    """
    weights = [direction_weights(lstm, suffix) for suffix in DIRECTION_SUFFIXES]
    positions = batch_size * num_steps
    pack_steps = batch_size >= cpu_arithmetic.MIN_ROWS_PER_CALL and positions >= cpu_arithmetic.MIN_TOTAL_ROWS
    pack_inputs = positions >= cpu_arithmetic.MIN_TOTAL_ROWS
    packed = None
    if (pack_steps or pack_inputs) and cpu_arithmetic.onednn_can_pack(weights[0][0]):
        packed = converted_once(lstm, "fp32", _packed_float_weights)
    inputs: list[Linear] = []
    recurrent: list[Linear] = []
    projection: list[Linear] = []
    for direction, (weight_ih, bias, weight_hh, weight_hr) in enumerate(weights):
        if packed is not None and pack_inputs:
            inputs.append(bucketed_rows(_packed_product(packed[direction][0], bias)))
        else:
            inputs.append(_linear(weight_ih, bias))
        for products, weight, index in ((recurrent, weight_hh, 1), (projection, weight_hr, 2)):
            if packed is not None and pack_steps:
                products.append(_packed_product(packed[direction][index]))
            else:
                products.append(_linear(weight))
    return LayerProducts(inputs, recurrent, projection)


def _packed_float_weights(lstm: torch.nn.LSTM) -> list[tuple[torch.Tensor, ...]]:
    """(W_ih, W_hh, W_hr) of each direction, packed by oneDNN."""
    return [
        tuple(
            torch.ops.mkldnn._reorder_linear_weight(weight.contiguous(), PACKING_HINT)
            for weight in (weight_ih, weight_hh, weight_hr)
        )
        for weight_ih, _, weight_hh, weight_hr in (direction_weights(lstm, s) for s in DIRECTION_SUFFIXES)
    ]


def _linear(weight: torch.Tensor, bias: Optional[torch.Tensor] = None) -> Linear:
    """torch's product with `weight` (and `bias`), bound here rather than by a loop's variables."""
    return lambda rows: torch.nn.functional.linear(rows, weight, bias)


def _packed_product(packed: torch.Tensor, bias: Optional[torch.Tensor] = None) -> Linear:
    return lambda rows: torch.ops.mkldnn._linear_pointwise(rows.contiguous(), packed, bias, "none", [], "")


def bucketed_rows(product: Linear) -> Linear:
    """`product`, computed on its rows padded with zeros to a multiple of `ROW_BUCKET` (see there)."""

    def run(rows: torch.Tensor) -> torch.Tensor:
        count = rows.size(0)
        padding = -count % ROW_BUCKET
        if padding == 0:
            return product(rows)
        return product(torch.cat([rows, rows.new_zeros(padding, rows.size(1))]))[:count]

    return run


def inference_bidirectional_lstm(
    lstm: torch.nn.LSTM,
    inputs: torch.Tensor,
    lengths: Optional[torch.Tensor] = None,
    state: Optional[LayerState] = None,
    products: ProductsFactory = float_products,
) -> tuple[torch.Tensor, LayerState]:
    """
    What `cpu_bidirectional_lstm` returns, for inference only (no gradients flow through it), with the
    products that `products` makes (default: float32, as the training recurrence).

    # Parameters

    lstm, inputs, lengths, state :
        As in `cpu_bidirectional_lstm`, where they are documented.
    products : `ProductsFactory`, optional (default = `float_products`)
        Makes the layer's matrix products: `float_products`, or `reduced_precision.py`'s int8 or bf16 ones.

    # Returns

    `(outputs, final_state)`, as `cpu_bidirectional_lstm` returns them (documented there).
    """
    batch_size, num_steps, _ = inputs.shape
    cells, projection_size = lstm.hidden_size, lstm.proj_size
    # Shapes: h (2, batch_size, proj_size), c (2, batch_size, cells): each row's running state, in place.
    if state is None:
        h, c = inputs.new_zeros(2, batch_size, projection_size), inputs.new_zeros(2, batch_size, cells)
    else:
        h, c = state[0].clone(), state[1].clone()
    order = None
    if lengths is not None:
        lengths = lengths.to(inputs.device)
        sorted_lengths, sorting = torch.sort(lengths, descending=True, stable=True)
        if not bool((sorting == torch.arange(batch_size, device=inputs.device)).all()):
            order = sorting
            inputs, h, c = inputs.index_select(0, order), h.index_select(1, order), c.index_select(1, order)
        lengths = sorted_lengths
        # Shape: (num_steps, batch_size): True where the row is still running
        running = torch.arange(num_steps, device=inputs.device).unsqueeze(1) < lengths
        # n_t, the rows running at step t: rows [0, n_t), since the rows are in decreasing length.
        active = running.sum(dim=1).tolist()
    else:
        running, active = None, [batch_size] * num_steps
    reversal = None if lengths is None else reversal_index(lengths, num_steps)
    time_major = inputs.transpose(0, 1)
    layer = products(lstm, batch_size, num_steps)
    # Shape: (num_positions, input_size) per direction: the real positions only, step after step, each
    # step's rows contiguous from `offsets[t]`; the backward direction reads each row reversed in time.
    packed_inputs = []
    for direction in range(2):
        rows = time_major if direction == 0 else reverse_in_time(time_major, reversal, time_dim=0)
        packed_inputs.append(rows.flatten(0, 1) if running is None else rows[running])
    offsets = [0]
    for count in active:
        offsets.append(offsets[-1] + count)
    # The input products (4 * cells per position and direction, the largest buffer) are made for
    # cpu.INFERENCE_CHUNK_ROWS positions at a time, so that a long document takes memory in proportion to its
    # outputs; the rows of one step always fall in one chunk.
    chunk_start, chunk_end, gate_inputs = 0, 0, []
    # Shape: (2, num_positions, proj_size): every real position's h, in the order of `gate_inputs`.
    packed_outputs = inputs.new_empty(2, offsets[-1], projection_size)
    gates = inputs.new_empty(2, batch_size, 4 * cells)
    for t, count in enumerate(active):
        start, end = offsets[t], offsets[t + 1]
        if end > chunk_end:
            chunk_start, chunk_end = (
                start,
                min(offsets[-1], start + max(cpu.INFERENCE_CHUNK_ROWS, count)),
            )
            gate_inputs = [
                product(rows[chunk_start:chunk_end]) for product, rows in zip(layer.inputs, packed_inputs)
            ]
        # Shape: (2, count, 4 * cells), then (2, count, cells) for each gate
        step_gates = gates[:, :count]
        for direction in range(2):
            recurrent = layer.recurrent[direction](h[direction, :count])
            step_inputs = gate_inputs[direction][start - chunk_start : end - chunk_start]
            torch.add(step_inputs, recurrent, out=step_gates[direction])
        candidate_slice = step_gates[..., 2 * cells : 3 * cells]
        tanh_into(candidate_slice, out=candidate_slice)
        sigmoid_except_candidate(step_gates, cells)
        input_gate, forget_gate, candidate, output_gate = step_gates.chunk(4, dim=-1)
        step_c = c[:, :count]
        step_c.mul_(forget_gate).addcmul_(input_gate, candidate)
        cell_output = output_gate * torch.tanh(step_c)
        for direction in range(2):
            h[direction, :count] = layer.projection[direction](cell_output[direction])
        packed_outputs[:, start:end] = h[:, :count]
    # Shape: (2, num_steps, batch_size, proj_size), zero at padding
    if running is None:
        outputs = packed_outputs.view(2, num_steps, batch_size, projection_size)
    else:
        outputs = packed_outputs.new_zeros(2, num_steps, batch_size, projection_size)
        outputs[:, running] = packed_outputs
    # Shape: (batch_size, num_tokens, 2 * proj_size)
    time_major_outputs = torch.cat([outputs[0], reverse_in_time(outputs[1], reversal, time_dim=0)], dim=-1)
    batch_outputs = time_major_outputs.transpose(0, 1)
    if order is not None:
        inverse = torch.empty_like(order)
        inverse[order] = torch.arange(batch_size, device=order.device)
        batch_outputs, h, c = (
            batch_outputs.index_select(0, inverse),
            h.index_select(1, inverse),
            c.index_select(1, inverse),
        )
    return batch_outputs, (h, c)
