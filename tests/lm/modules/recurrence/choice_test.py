"""`choose_recurrence`: which form runs a call, in each situation its docstring names, and that every form
keeps the one signature and computes the same as torch's LSTM."""

import functools

import pytest
import torch

from maelmo_plugin.lm.modules.recurrence.choice import RecurrenceOptions, choose_recurrence
from maelmo_plugin.lm.modules.recurrence.cpu import cpu_bidirectional_lstm
from maelmo_plugin.lm.modules.recurrence.cuda_graphs import GraphedRecurrence
from maelmo_plugin.lm.modules.recurrence.elmo_cell import ElmoCellPair, elmo_cells
from maelmo_plugin.lm.modules.recurrence.inference import inference_bidirectional_lstm
from maelmo_plugin.lm.modules.recurrence.reduced_precision import int8_products
from maelmo_plugin.lm.modules.recurrence.torch_lstm import torch_lstm

LENGTHS = torch.tensor([5, 3, 4])


@pytest.fixture
def lstm():
    torch.manual_seed(0)
    return torch.nn.LSTM(6, 10, proj_size=3, batch_first=True, bidirectional=True).double()


def inputs(requires_grad=False):
    return torch.randn(3, 5, 6, dtype=torch.float64, requires_grad=requires_grad)


def test_a_cpu_call_that_needs_gradients_runs_the_training_recurrence(lstm):
    assert choose_recurrence(lstm, inputs(), LENGTHS, None) is cpu_bidirectional_lstm


@pytest.mark.parametrize("how", ["no_grad", "frozen"])
def test_a_cpu_call_without_gradients_runs_the_inference_recurrence_with_its_precision(lstm, how):
    if how == "frozen":
        lstm.requires_grad_(False)
    with torch.set_grad_enabled(how != "no_grad"):
        chosen = choose_recurrence(lstm, inputs(), LENGTHS, None, precision="int8")
    assert isinstance(chosen, functools.partial)
    assert chosen.func is inference_bidirectional_lstm
    assert chosen.keywords == {"products": int8_products}


def test_cpu_recurrence_off_runs_torch(lstm):
    assert (
        choose_recurrence(lstm, inputs(), LENGTHS, None, options=RecurrenceOptions(cpu_recurrence=False))
        is torch_lstm
    )


def test_graphs_run_unpadded_calls_off_the_cpu_recurrence_only(lstm):
    graphs = GraphedRecurrence(device_type="cpu")
    assert choose_recurrence(lstm, inputs(), None, None, options=RecurrenceOptions(False, graphs)) is graphs
    # Padding needs packing, which a graph of one shape cannot hold; disabled graphs are never chosen.
    assert (
        choose_recurrence(lstm, inputs(), LENGTHS, None, options=RecurrenceOptions(False, graphs))
        is torch_lstm
    )
    graphs.enabled = False
    assert (
        choose_recurrence(lstm, inputs(), None, None, options=RecurrenceOptions(False, graphs)) is torch_lstm
    )


@pytest.mark.parametrize("lengths", [None, LENGTHS])
@pytest.mark.parametrize("grad", [True, False])
def test_every_form_computes_what_torch_computes(lstm, lengths, grad):
    """The one signature, (lstm, inputs, lengths, state) -> (outputs, state), in float64: the same outputs
    and final states from each form, as `choose_recurrence` hands it out."""
    x = inputs()
    state = (torch.randn(2, 3, 3, dtype=torch.float64), torch.randn(2, 3, 10, dtype=torch.float64))
    expected, (h, c) = torch_lstm(lstm, x, lengths, state)
    with torch.set_grad_enabled(grad):
        form = choose_recurrence(lstm, x, lengths, state)
        outputs, (form_h, form_c) = form(lstm, x, lengths, state)
    torch.testing.assert_close(outputs, expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(form_h, h, rtol=0, atol=1e-12)
    torch.testing.assert_close(form_c, c, rtol=0, atol=1e-12)


@pytest.mark.parametrize("device_and_grad", ["training", "no_grad", "cpu_recurrence_off"])
def test_elmo_cells_are_chosen_for_every_call_and_run_the_pair(device_and_grad):
    """ELMo's cell (`cell="elmo"`) is one of the forms: the pair runs each call, whatever else holds."""
    torch.manual_seed(0)
    cells = ElmoCellPair(6, 3, 10, cell_clip=3.0, projection_clip=3.0)
    x = torch.randn(3, 5, 6)
    options = RecurrenceOptions(cpu_recurrence=device_and_grad != "cpu_recurrence_off")
    with torch.set_grad_enabled(device_and_grad != "no_grad"):
        form = choose_recurrence(cells, x, LENGTHS, None, options=options)
        outputs, (h, c) = form(cells, x, LENGTHS, None)
        expected, (expected_h, expected_c) = cells(x, LENGTHS, None)
    assert form is elmo_cells
    assert torch.equal(outputs, expected) and torch.equal(h, expected_h) and torch.equal(c, expected_c)
