import pytest
import torch

from maelmo_plugin.lm.modules.masked_elmo_encoder import MaskedElmoEncoder
from maelmo_plugin.lm.modules.recurrence import choice
from maelmo_plugin.lm.modules.recurrence.cpu import cpu_bidirectional_lstm
from maelmo_plugin.lm.modules.recurrence.inference import (
    LayerProducts,
    float_products,
    inference_bidirectional_lstm,
)

BATCH, STEPS, INPUT, CELLS, PROJECTION = 4, 7, 6, 10, 3
# Unsorted, with two rows of the full length: the recurrence sorts them and puts them back.
LENGTHS = torch.tensor([3, 7, 5, 7])
# float64 is the same arithmetic (to rounding); in float32 the products run over fewer rows than the
# training recurrence's, which may round differently.
TOLERANCES = {torch.float64: dict(atol=1e-12, rtol=1e-10), torch.float32: dict(atol=1e-6, rtol=1e-5)}


def lstm_and_inputs(dtype: torch.dtype):
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(INPUT, CELLS, proj_size=PROJECTION, batch_first=True, bidirectional=True).to(dtype)
    return lstm, torch.randn(BATCH, STEPS, INPUT, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("lengths", [None, LENGTHS], ids=["full", "padded"])
@pytest.mark.parametrize("initial_state", [False, True], ids=["zero-state", "given-state"])
def test_equals_the_training_recurrence(dtype, lengths, initial_state):
    lstm, inputs = lstm_and_inputs(dtype)
    state = None
    if initial_state:
        state = (torch.randn(2, BATCH, PROJECTION, dtype=dtype), torch.randn(2, BATCH, CELLS, dtype=dtype))
    with torch.no_grad():
        expected_outputs, expected_state = cpu_bidirectional_lstm(lstm, inputs, lengths, state)
        outputs, final_state = inference_bidirectional_lstm(lstm, inputs, lengths, state)
    torch.testing.assert_close(outputs, expected_outputs, **TOLERANCES[dtype])
    for actual, expected in zip(final_state, expected_state):
        torch.testing.assert_close(actual, expected, **TOLERANCES[dtype])
    if lengths is not None:
        assert outputs[0, 3:].abs().sum() == 0 and outputs[2, 5:].abs().sum() == 0
    if state is not None:
        assert state[0].abs().sum() > 0  # the caller's state is not overwritten
        torch.testing.assert_close(inference_bidirectional_lstm(lstm, inputs, lengths, state)[0], outputs)


@pytest.mark.parametrize("chunk_rows", [1, 5, 9])
def test_input_products_made_a_few_positions_at_a_time_give_the_same_outputs(monkeypatch, chunk_rows):
    """A long document's input products are made chunk by chunk (memory in proportion to the outputs); a
    chunk holds at least one step's rows, whatever INFERENCE_CHUNK_ROWS says."""
    from maelmo_plugin.lm.modules.recurrence import cpu

    lstm, inputs = lstm_and_inputs(torch.float64)
    state = (
        torch.randn(2, BATCH, PROJECTION, dtype=torch.float64),
        torch.randn(2, BATCH, CELLS, dtype=torch.float64),
    )
    with torch.no_grad():
        expected_outputs, expected_state = cpu_bidirectional_lstm(lstm, inputs, LENGTHS, state)
        monkeypatch.setattr(cpu, "INFERENCE_CHUNK_ROWS", chunk_rows)
        outputs, final_state = inference_bidirectional_lstm(lstm, inputs, LENGTHS, state)
    torch.testing.assert_close(outputs, expected_outputs, **TOLERANCES[torch.float64])
    for actual, expected in zip(final_state, expected_state):
        torch.testing.assert_close(actual, expected, **TOLERANCES[torch.float64])


def test_a_padded_row_equals_the_row_alone():
    lstm, inputs = lstm_and_inputs(torch.float32)
    with torch.no_grad():
        outputs, (h, c) = inference_bidirectional_lstm(lstm, inputs, LENGTHS)
        for row, length in enumerate(LENGTHS.tolist()):
            alone, (h_alone, c_alone) = inference_bidirectional_lstm(lstm, inputs[row : row + 1, :length])
            torch.testing.assert_close(outputs[row, :length], alone[0], **TOLERANCES[torch.float32])
            torch.testing.assert_close(h[:, row], h_alone[:, 0], **TOLERANCES[torch.float32])
            torch.testing.assert_close(c[:, row], c_alone[:, 0], **TOLERANCES[torch.float32])


def test_padding_is_not_computed():
    """Every step's products multiply only the rows still running: 3 + 7 + 5 + 7 positions in all."""
    lstm, inputs = lstm_and_inputs(torch.float32)
    rows = []

    def counting(lstm, batch_size, num_steps):
        def count(product):
            return lambda tensor: rows.append(tensor.size(0)) or product(tensor)

        layer = float_products(lstm, batch_size, num_steps)
        return LayerProducts(*([count(product) for product in kind] for kind in layer))

    with torch.no_grad():
        inference_bidirectional_lstm(lstm, inputs, LENGTHS, products=counting)
    positions = int(LENGTHS.sum())
    # Per direction: one input product over all positions, then a recurrent and a projection product per step.
    assert sorted(rows, reverse=True)[:2] == [positions, positions]
    assert sum(rows) == 2 * positions + 2 * 2 * positions


@pytest.mark.parametrize(
    "grad_enabled, frozen, expected",
    [(False, False, "inference"), (True, True, "inference"), (True, False, "training")],
)
def test_the_encoder_runs_the_inference_recurrence_when_nothing_needs_gradients(
    monkeypatch, grad_enabled, frozen, expected
):
    encoder = MaskedElmoEncoder(input_dim=8, cells=12, num_layers=2, dropout=0.0)
    encoder.requires_grad_(not frozen)
    calls = []
    for name, kind in (("cpu_bidirectional_lstm", "training"), ("inference_bidirectional_lstm", "inference")):
        original = getattr(choice, name)
        monkeypatch.setattr(
            choice,
            name,
            lambda *args, kind=kind, original=original, **kwargs: (
                calls.append(kind) or original(*args, **kwargs)
            ),
        )
    with torch.set_grad_enabled(grad_enabled):
        encoder(torch.randn(3, 7, 8), torch.arange(7).unsqueeze(0) < LENGTHS[:3].unsqueeze(1))
    assert calls == [expected, expected]


def test_the_input_products_run_on_rows_padded_to_a_bucket(monkeypatch):
    """oneDNN keeps a kernel per number of rows: the input products see multiples of ROW_BUCKET only, and
    each row's output is the one the unpadded product gives, bit for bit."""
    from maelmo_plugin.lm.modules.recurrence import cpu_arithmetic, inference

    if not cpu_arithmetic.onednn_can_pack(torch.zeros(1)):
        pytest.skip("oneDNN's packed products are not available")
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(16, 32, proj_size=8, batch_first=True, bidirectional=True)
    inputs = torch.randn(16, 40, 16)
    lengths = torch.tensor([40, 3, 17, 29, 40, 11, 5, 38, 22, 1, 9, 33, 27, 14, 6, 30])
    rows = []
    original = inference._packed_product

    def recording(packed, bias=None):
        product = original(packed, bias)
        if bias is None:  # the steps' products
            return product
        return lambda tensor: rows.append(tensor.size(0)) or product(tensor)

    monkeypatch.setattr(inference, "_packed_product", recording)
    with torch.no_grad():
        outputs, (h, c) = inference_bidirectional_lstm(lstm, inputs, lengths)
        monkeypatch.setattr(inference, "ROW_BUCKET", 1)
        recorded, rows[:] = list(rows), []
        unpadded, (h_unpadded, c_unpadded) = inference_bidirectional_lstm(lstm, inputs, lengths)
    assert int(lengths.sum()) % 64 != 0 and recorded == [384, 384]  # 325 positions, per direction
    assert rows == [325, 325]
    assert torch.equal(outputs, unpadded) and torch.equal(h, h_unpadded) and torch.equal(c, c_unpadded)
