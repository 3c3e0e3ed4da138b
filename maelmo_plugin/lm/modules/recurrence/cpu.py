"""
A bidirectional LSTM-with-projection layer for the CPU: the same arithmetic as torch's CPU LSTM, arranged
so that most of it runs as large or packed matrix products.

Why it exists: oneDNN has no LSTM with projection, so on a CPU `nn.LSTM(proj_size=...)` runs ATen's
generic per-step implementation. Profiled at d=512 and 2048 cells, batch 16 (docs/performance.md):
* 42% of the encoder's forward + backward went to the recurrent weight gradient, added one time step at a
  time: a product whose inner dimension is the batch size, writing an 8 MB matrix per step;
* 21% went to the per-step recurrent products, which MKL runs at a third of the core's peak for 16 rows,
  because it re-packs the large weight on every call.

So here:
* the backward loop only stores each step's gate gradients and each step's gradient of h; the recurrent
  and projection weight gradients are computed after the loop, as `(4·cells x T·batch) @ (T·batch x d/2)`
  products at the matmul peak;
* every weight the loop multiplies is packed once per pass by oneDNN (`packed_linear`), and so are the
  input products of all time steps;
* when no gradient is wanted (inference: representations, exports, evaluation), the forward pass keeps the
  gates and cell states of one chunk of time steps at a time, not of the whole input, so that a document of
  20,000 word-pieces takes memory in proportion to its outputs (`_recurrence_in_chunks`).

It computes exactly what `nn.LSTM(..., proj_size=P, bidirectional=True)` computes with packed sequences
(values and gradients, tested against it in float64 and float32), reads that module's parameters, so
checkpoints do not change, and is used only on the CPU: on a GPU, cuDNN fuses the whole recurrence.

This file imports only torch and the two files of this folder it is made with, which import only torch too:
`cpu_arithmetic.py` (the packed products and the gates' functions) and `layer.py` (`LayerState`, the
reversal of rows in time). `allennlp maelmo-export` ships the three joined as one file, beside
`modeling_masked_elmo.py`, which runs it on a CPU (`standalone.py`).
"""

from collections.abc import Sequence
from typing import Optional

import torch

from maelmo_plugin.lm.modules.recurrence.cpu_arithmetic import (
    Linear,
    linear,
    packed_linear,
    sigmoid_except_candidate,
    tanh_into,
)
from maelmo_plugin.lm.modules.recurrence.layer import (
    LayerState,
    direction_parameters,
    reversal_index,
    reverse_in_time,
)

# In inference (no gradient wanted) the recurrence runs this many rows (time steps x batch rows) at a time:
# enough for its input product to run near the matmul peak, few enough that a chunk's buffers stay small
# (about 270 MB at the paper's 4096 cells, 35 MB at the Quickstart's 512) however long the input.
INFERENCE_CHUNK_ROWS = 1024


class _ProjectedLstmRecurrence(torch.autograd.Function):
    """
    The recurrence of D independent LSTMs with projection (D = 2: forward and backward), given the input
    pre-activations of each.

    Shapes (T steps, B rows, C cells, P projection): weight_hh (D, 4C, P); weight_hr (D, P, C);
    h0 (D, B, P); c0 (D, B, C); then D tensors gate_inputs (T, B, 4C) = x W_ih^T + b_ih + b_hh, gates in
    torch's order (input, forget, cell, output).
    Returns every step's projected state h (D, T, B, P) and cell state c (D, T, B, C).
    """

    @staticmethod
    def forward(ctx, weight_hh, weight_hr, h0, c0, *gate_inputs):
        num_directions, batch_size, cells = c0.shape
        num_steps = gate_inputs[0].size(0)
        recurrent = [packed_linear(weight, batch_size, num_steps) for weight in weight_hh]
        projection = [packed_linear(weight, batch_size, num_steps) for weight in weight_hr]
        gates = c0.new_empty(num_directions, num_steps, batch_size, 4 * cells)  # after their nonlinearities
        cell_states = c0.new_empty(num_directions, num_steps, batch_size, cells)
        tanh_cells = torch.empty_like(cell_states)
        outputs = c0.new_empty(num_directions, num_steps, batch_size, weight_hr.size(1))
        buffers = (gates, cell_states, tanh_cells, outputs)
        _run_steps(recurrent, projection, gate_inputs, (h0, c0), buffers)
        ctx.save_for_backward(weight_hh, weight_hr, h0, c0, *buffers)
        ctx.set_materialize_grads(False)
        return outputs, cell_states

    @staticmethod
    def backward(ctx, grad_outputs, grad_cell_states):
        weight_hh, weight_hr, h0, c0, gates, cell_states, tanh_cells, outputs = ctx.saved_tensors
        num_directions, num_steps, batch_size, four_cells = gates.shape
        cells = four_cells // 4
        recurrent_transposed = [packed_linear(weight.t(), batch_size, num_steps) for weight in weight_hh]
        projection_transposed = [packed_linear(weight.t(), batch_size, num_steps) for weight in weight_hr]
        # The loop fills grad_gates[:, t] with d(loss)/d(pre-activation) and grad_h_total[:, t] with
        # d(loss)/d(h_t) (from the output and from step t + 1); the weight gradients come after the loop.
        grad_gates = torch.empty_like(gates)
        grad_h_total = torch.empty_like(outputs)
        grad_m = c0.new_empty(c0.shape)  # d(loss)/d(m_t), m = o * tanh(c), h = m W_hr^T
        grad_h = h0.new_zeros(h0.shape)
        grad_c = c0.new_zeros(c0.shape)
        for t in reversed(range(num_steps)):
            if grad_outputs is not None:
                grad_h = torch.add(grad_outputs[:, t], grad_h, out=grad_h_total[:, t])
            else:
                grad_h_total[:, t] = grad_h
            for direction in range(num_directions):
                grad_m[direction] = projection_transposed[direction](grad_h[direction])
            step_gates = gates[:, t]
            input_gate, forget_gate, candidate, output_gate = step_gates.chunk(4, dim=-1)
            tanh_c = tanh_cells[:, t]
            grad_c = torch.addcmul(grad_c, grad_m * output_gate, 1 - tanh_c * tanh_c)
            if grad_cell_states is not None:
                grad_c += grad_cell_states[:, t]
            previous_c = cell_states[:, t - 1] if t > 0 else c0
            step_grad = grad_gates[:, t]
            grad_input, grad_forget, grad_candidate, grad_output = step_grad.chunk(4, dim=-1)
            # d(loss)/d(gate) first, then times d(gate)/d(pre-activation), for all four gates at once:
            # s(1 - s) for the sigmoids, 1 - tanh² for the candidate.
            torch.mul(grad_c, candidate, out=grad_input)
            torch.mul(grad_c, previous_c, out=grad_forget)
            torch.mul(grad_c, input_gate, out=grad_candidate)
            torch.mul(grad_m, tanh_c, out=grad_output)
            derivative = step_gates - step_gates * step_gates
            derivative[..., 2 * cells : 3 * cells] = 1 - candidate * candidate
            step_grad *= derivative
            grad_c = grad_c * forget_gate
            grad_h = torch.stack([product(grad) for product, grad in zip(recurrent_transposed, step_grad)])
        # The weight gradients of all steps at once: sums over T·B rows, as single matrix products.
        previous_h = torch.cat([h0.unsqueeze(1), outputs[:, :-1]], dim=1)
        grad_weight_hh = torch.bmm(grad_gates.flatten(1, 2).transpose(1, 2), previous_h.flatten(1, 2))
        cell_outputs = gates[..., 3 * cells :] * tanh_cells
        grad_weight_hr = torch.bmm(grad_h_total.flatten(1, 2).transpose(1, 2), cell_outputs.flatten(1, 2))
        return (grad_weight_hh, grad_weight_hr, grad_h, grad_c, *grad_gates.unbind(0))


def _run_steps(
    recurrent: list[Linear],
    projection: list[Linear],
    gate_inputs: Sequence[torch.Tensor],
    state: LayerState,
    buffers: tuple[torch.Tensor, ...],
) -> LayerState:
    """
    The forward recurrence over the steps of `gate_inputs` (D tensors (steps, B, 4C)) from `state`, writing
    each step's gates (after their nonlinearities), c, tanh(c) and h into `buffers` (gates, cell_states,
    tanh_cells, outputs: (D, steps, B, ...)), which `_ProjectedLstmRecurrence` keeps for its backward pass;
    returns the last (h, c).
    """
    (h, c), (gates, cell_states, tanh_cells, outputs) = state, buffers
    cells = c.size(-1)
    for t in range(gates.size(1)):
        step_gates = gates[:, t]
        for direction in range(len(recurrent)):
            torch.add(
                gate_inputs[direction][t], recurrent[direction](h[direction]), out=step_gates[direction]
            )
        candidate_slice = step_gates[..., 2 * cells : 3 * cells]
        tanh_into(candidate_slice, out=candidate_slice)
        sigmoid_except_candidate(step_gates, cells)
        input_gate, forget_gate, candidate, output_gate = step_gates.chunk(4, dim=-1)
        c = torch.mul(forget_gate, c, out=cell_states[:, t]).addcmul_(input_gate, candidate)
        tanh_c = tanh_into(c, out=tanh_cells[:, t])
        cell_output = output_gate * tanh_c
        h = outputs[:, t]
        for direction in range(len(projection)):
            h[direction] = projection[direction](cell_output[direction])
    return h, c


def _recurrence_in_chunks(
    weights: tuple[torch.Tensor, torch.Tensor, Sequence[torch.Tensor], Sequence[torch.Tensor]],
    state: LayerState,
    inputs: Sequence[torch.Tensor],
    lengths: Optional[torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor]:
    """
    `_ProjectedLstmRecurrence`'s forward pass when no gradient is wanted, `INFERENCE_CHUNK_ROWS` (steps x
    rows) at a time: only one chunk's input products, gates and cell states exist at once, where the whole
    pass holds 10·C floats per token and direction (0.8 GB per layer for 20,000 tokens at 512 cells). The
    steps are the training pass's sums; only the input product is made per chunk.

    `weights`: weight_hh and weight_hr stacked over the D directions, then per direction the input weights
    and the biases (b_ih + b_hh); `inputs`: per direction (T, B, input_size), time-major, rows left-aligned. Returns
    every step's h (D, T, B, P) and each row's c at its last real step (D, B, C).
    """
    weight_hh, weight_hr, weight_ih, biases = weights
    h, c = state
    num_directions, batch_size, cells = c.shape
    num_steps = inputs[0].size(0)
    chunk = max(1, INFERENCE_CHUNK_ROWS // batch_size)
    recurrent = [packed_linear(weight, batch_size, num_steps) for weight in weight_hh]
    projection = [packed_linear(weight, batch_size, num_steps) for weight in weight_hr]
    outputs = c.new_empty(num_directions, num_steps, batch_size, weight_hr.size(1))
    final_c = c.clone()
    last_steps = None if lengths is None else lengths - 1
    for start in range(0, num_steps, chunk):
        end = min(start + chunk, num_steps)
        # Shape: (D, steps, B, 4C): the input products, turned into the gates in place. One direction's
        # product at a time, so that only one is ever held twice.
        gates = c.new_empty(num_directions, end - start, batch_size, 4 * cells)
        for direction, (x, w, b) in enumerate(zip(inputs, weight_ih, biases)):
            gates[direction] = linear(x[start:end], w, b)
        cell_states = c.new_empty(num_directions, end - start, batch_size, cells)
        tanh_cells = torch.empty_like(cell_states)
        buffers = (gates, cell_states, tanh_cells, outputs[:, start:end])
        h, c = _run_steps(recurrent, projection, gates.unbind(0), (h, c), buffers)
        if last_steps is None:
            final_c = c
        else:
            # The rows whose last real step falls in this chunk.
            rows = ((last_steps >= start) & (last_steps < end)).nonzero().squeeze(1)
            final_c[:, rows] = cell_states[:, last_steps[rows] - start, rows]
    return outputs, final_c


def _at_last_step(tensor: torch.Tensor, lengths: Optional[torch.Tensor]) -> torch.Tensor:
    """(D, T, B, size) -> (D, B, size): each row's value at its last real step."""
    if lengths is None:
        return tensor[:, -1]
    index = (lengths - 1).view(1, 1, -1, 1).expand(tensor.size(0), 1, -1, tensor.size(-1))
    return tensor.gather(1, index).squeeze(1)


def cpu_bidirectional_lstm(
    lstm: torch.nn.LSTM,
    inputs: torch.Tensor,
    lengths: Optional[torch.Tensor] = None,
    state: Optional[LayerState] = None,
) -> tuple[torch.Tensor, LayerState]:
    """
    What `lstm(pack_padded_sequence(inputs, lengths), state)` computes for a one-layer bidirectional
    `nn.LSTM` with `proj_size` and `batch_first=True`, with the weight gradients batched over time.

    # Parameters

    lstm : `torch.nn.LSTM`
        One layer, bidirectional, batch first, with `proj_size`; only its parameters are used.
    inputs : `torch.Tensor`
        Shape: (batch_size, num_tokens, input_size).
    lengths : `torch.Tensor`, optional
        Shape: (batch_size,), each at least 1; rows are left-aligned. None when no row is padded.
    state : `LayerState`, optional
        Initial (h, c), shapes (2, batch_size, proj_size) and (2, batch_size, hidden_size); zeros if None.

    # Returns

    outputs : `torch.Tensor`
        Shape: (batch_size, num_tokens, 2 * proj_size), `[forward ; backward]`, zero at padding.
    final_state : `LayerState`
        (h, c): the forward direction at each row's last real token, the backward one at its first token.
    """
    batch_size, num_steps, _ = inputs.shape
    cells, projection = lstm.hidden_size, lstm.proj_size
    if lengths is not None:
        lengths = lengths.to(inputs.device)
    reversal = None if lengths is None else reversal_index(lengths, num_steps)
    time_major = inputs.transpose(0, 1).contiguous()
    direction_inputs = (time_major, reverse_in_time(time_major, reversal, time_dim=0))
    # The input products (num_steps, batch_size, 4 * cells) per direction: of all steps at once, one large
    # matrix product each, when training; chunk by chunk in inference (`_recurrence_in_chunks`).
    weight_ih = direction_parameters(lstm, "weight_ih")
    bias_ih, bias_hh = direction_parameters(lstm, "bias_ih"), direction_parameters(lstm, "bias_hh")
    biases = (bias_ih[0] + bias_hh[0], bias_ih[1] + bias_hh[1])
    if state is None:
        state = (
            inputs.new_zeros(2, batch_size, projection),
            inputs.new_zeros(2, batch_size, cells),
        )
    weight_hh = torch.stack(direction_parameters(lstm, "weight_hh"))
    weight_hr = torch.stack(direction_parameters(lstm, "weight_hr"))
    # Backward needs every step's gates and cell states (10·C floats per token and direction); inference
    # needs only the outputs, so it keeps one chunk of steps at a time.
    needs_gradients = torch.is_grad_enabled() and any(
        tensor.requires_grad for tensor in (inputs, *state, *lstm.parameters())
    )
    if needs_gradients:
        gate_inputs = [linear(x, w, b) for x, w, b in zip(direction_inputs, weight_ih, biases)]
        # Shapes: (2, num_steps, batch_size, proj_size) and (2, num_steps, batch_size, cells)
        outputs, cell_states = _ProjectedLstmRecurrence.apply(weight_hh, weight_hr, *state, *gate_inputs)
        final_cells = _at_last_step(cell_states, lengths)
    else:
        weights = (weight_hh, weight_hr, weight_ih, biases)
        outputs, final_cells = _recurrence_in_chunks(weights, state, direction_inputs, lengths)
    final_state = (_at_last_step(outputs, lengths), final_cells)
    # Shape: (num_steps, batch_size, 2 * proj_size)
    time_major_outputs = torch.cat([outputs[0], reverse_in_time(outputs[1], reversal, time_dim=0)], dim=-1)
    batch_outputs = time_major_outputs.transpose(0, 1)
    if lengths is not None:
        # As pad_packed_sequence: the steps past each row's end are zero.
        keep = torch.arange(num_steps, device=inputs.device).unsqueeze(0) < lengths.unsqueeze(1)
        batch_outputs = batch_outputs * keep.unsqueeze(-1).to(batch_outputs.dtype)
    return batch_outputs, final_state
