import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from maelmo_plugin.lm.modules.masked_elmo_encoder import MaskedElmoEncoder
from maelmo_plugin.lm.modules.recurrence import cpu as recurrence_module
from maelmo_plugin.lm.modules.recurrence.cpu import _ProjectedLstmRecurrence, cpu_bidirectional_lstm

BATCH, STEPS, INPUT, CELLS, PROJECTION = 3, 7, 6, 10, 3
LENGTHS = torch.tensor([7, 3, 5])
# float64 runs the plain-matmul fallback; float32 runs oneDNN's packed products (`onednn_products`).
TOLERANCES = {torch.float64: dict(atol=1e-12, rtol=1e-10), torch.float32: dict(atol=2e-5, rtol=1e-4)}


def torch_lstm(lstm, inputs, lengths, state):
    """The reference: torch's own LSTM, with packing for padded rows, as `BiLstmLayer` runs it on a GPU."""
    if lengths is None:
        outputs, (h, c) = lstm(inputs, state)
        return outputs, h, c
    packed = pack_padded_sequence(inputs, lengths, batch_first=True, enforce_sorted=False)
    packed_outputs, (h, c) = lstm(packed, state)
    outputs, _ = pad_packed_sequence(packed_outputs, batch_first=True, total_length=inputs.size(1))
    return outputs, h, c


def ours(lstm, inputs, lengths, state):
    outputs, (h, c) = cpu_bidirectional_lstm(lstm, inputs, lengths, state)
    return outputs, h, c


def values_and_gradients(function, lstm, inputs, lengths, state):
    """Outputs, final states, and the gradients of a random projection of all three with respect to
    every parameter, the inputs and the initial state."""
    leaves = [inputs, *state, *lstm.parameters()]
    for leaf in leaves:
        leaf.grad = None
    results = function(lstm, inputs, lengths, state)
    generator = torch.Generator().manual_seed(1)
    loss = sum(
        (result * torch.randn(result.shape, generator=generator, dtype=result.dtype)).sum()
        for result in results
    )
    loss.backward()
    return [result.detach() for result in results] + [leaf.grad.clone() for leaf in leaves]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("lengths", [None, LENGTHS], ids=["full", "padded"])
def test_values_and_gradients_equal_torch_lstm(onednn_products, dtype, lengths):
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(INPUT, CELLS, proj_size=PROJECTION, batch_first=True, bidirectional=True).to(dtype)
    inputs = torch.randn(BATCH, STEPS, INPUT, dtype=dtype, requires_grad=True)
    state = (
        torch.randn(2, BATCH, PROJECTION, dtype=dtype, requires_grad=True),
        torch.randn(2, BATCH, CELLS, dtype=dtype, requires_grad=True),
    )
    expected = values_and_gradients(torch_lstm, lstm, inputs, lengths, state)
    actual = values_and_gradients(ours, lstm, inputs, lengths, state)
    assert len(actual) == 3 + 3 + 10  # outputs, h, c; d(inputs, h0, c0); 2 directions x 5 parameters
    for expected_tensor, actual_tensor in zip(expected, actual):
        torch.testing.assert_close(actual_tensor, expected_tensor, **TOLERANCES[dtype])
    # Per direction: the input product and its input gradient, then 2 products per step forward and 2 back.
    assert len(onednn_products) == (0 if dtype == torch.float64 else 2 * (2 + 4 * STEPS))


def test_zero_initial_state_and_zero_outputs_at_padding():
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(INPUT, CELLS, proj_size=PROJECTION, batch_first=True, bidirectional=True)
    inputs = torch.randn(BATCH, STEPS, INPUT)
    zeros = (torch.zeros(2, BATCH, PROJECTION), torch.zeros(2, BATCH, CELLS))
    outputs, (h, c) = cpu_bidirectional_lstm(lstm, inputs, LENGTHS)
    expected_outputs, expected_h, expected_c = torch_lstm(lstm, inputs, LENGTHS, zeros)
    torch.testing.assert_close(outputs, expected_outputs)
    torch.testing.assert_close(h, expected_h)
    torch.testing.assert_close(c, expected_c)
    assert outputs[1, 3:].abs().sum() == 0 and outputs[2, 5:].abs().sum() == 0


def test_the_recurrence_passes_gradcheck_including_cell_state_gradients():
    torch.manual_seed(0)
    directions, steps, batch, cells, projection = 2, 4, 2, 3, 2
    double = dict(dtype=torch.float64, requires_grad=True)
    arguments = (
        torch.randn(directions, 4 * cells, projection, **double),
        torch.randn(directions, projection, cells, **double),
        torch.randn(directions, batch, projection, **double),
        torch.randn(directions, batch, cells, **double),
        *(torch.randn(steps, batch, 4 * cells, **double) for _ in range(directions)),
    )
    assert torch.autograd.gradcheck(_ProjectedLstmRecurrence.apply, arguments)


def test_the_encoder_gives_the_same_values_and_gradients_with_either_cpu_kernel():
    torch.manual_seed(0)
    ours_encoder = MaskedElmoEncoder(input_dim=8, cells=12, num_layers=2, dropout=0.0)
    torch_encoder = MaskedElmoEncoder(input_dim=8, cells=12, num_layers=2, dropout=0.0, cpu_recurrence=False)
    torch_encoder.load_state_dict(ours_encoder.state_dict())
    ours_encoder.double(), torch_encoder.double()  # the wiring is what is checked here: exact arithmetic
    inputs = torch.randn(3, 7, 8, dtype=torch.float64)
    mask = torch.arange(7).unsqueeze(0) < LENGTHS.unsqueeze(1)
    results = []
    for encoder in (ours_encoder, torch_encoder):
        representations, states = encoder(inputs, mask)
        (representations[-1].square().sum() + states[-1][1].sum()).backward()
        results.append([representations[-1], *states[-1]] + [p.grad for p in encoder.parameters()])
    for actual, expected in zip(*results):
        torch.testing.assert_close(actual, expected, **TOLERANCES[torch.float64])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("lengths", [None, torch.tensor([23, 5, 17])], ids=["full", "padded"])
@pytest.mark.parametrize("chunk_rows", [3, 12, 1024], ids=["1 step", "4 steps", "whole"])
def test_inference_in_chunks_equals_the_training_pass(monkeypatch, dtype, lengths, chunk_rows):
    """Without gradients the recurrence keeps one chunk of steps at a time (bounded memory for long inputs):
    the same outputs and final states as the pass that keeps every step for backward, whatever the chunks."""
    monkeypatch.setattr(recurrence_module, "INFERENCE_CHUNK_ROWS", chunk_rows)
    chunks = []
    run_steps = recurrence_module._run_steps
    monkeypatch.setattr(
        recurrence_module, "_run_steps", lambda *args: chunks.append(args[-1][0].size(1)) or run_steps(*args)
    )
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(INPUT, CELLS, proj_size=PROJECTION, batch_first=True, bidirectional=True).to(dtype)
    inputs = torch.randn(BATCH, 23, INPUT, dtype=dtype)
    state = (torch.randn(2, BATCH, PROJECTION, dtype=dtype), torch.randn(2, BATCH, CELLS, dtype=dtype))
    expected = [tensor.detach() for tensor in ours(lstm, inputs, lengths, state)]  # parameters need grads
    assert chunks == [23]
    with torch.no_grad():
        actual = ours(lstm, inputs, lengths, state)
    steps_per_chunk = max(1, chunk_rows // BATCH)
    assert chunks[1:] == [min(steps_per_chunk, 23 - start) for start in range(0, 23, steps_per_chunk)]
    for actual_tensor, expected_tensor in zip(actual, expected):
        torch.testing.assert_close(actual_tensor, expected_tensor, **TOLERANCES[dtype])


def test_the_path_of_0_1_0_still_imports_the_recurrence(tmp_path):
    """A Hugging Face model re-saved with the plugin imported ships a `cpu_lstm_recurrence.py` that imports
    the recurrence from its 0.1.0 path (docs/hf_export.md): that file keeps loading."""
    resaved = tmp_path / "cpu_lstm_recurrence.py"
    resaved.write_text("from maelmo_plugin.lm.modules.cpu_lstm_recurrence import cpu_bidirectional_lstm\n")
    namespace: dict = {}
    exec(compile(resaved.read_text(), str(resaved), "exec"), namespace)
    assert namespace["cpu_bidirectional_lstm"] is cpu_bidirectional_lstm
