"""
`GraphedRecurrence` on a CPU, with a stand-in for CUDA graph capture that keeps a graph's one trait that matters
to its caller: its outputs live in buffers that the next replay overwrites. What is checked here is the choice
of graph or eager, and that a graphed layer computes what the eager one does over carried states. The real
capture is checked on a GPU (`cuda_graphs_gpu_test.py`).
"""

import logging

import pytest
import torch

from maelmo_plugin.lm.modules.masked_elmo_encoder import MaskedElmoEncoder
from maelmo_plugin.lm.modules.recurrence.choice import RecurrenceOptions
from maelmo_plugin.lm.modules.recurrence.cuda_graphs import CAPTURE_AFTER, GraphedRecurrence


class IntoBuffer(torch.autograd.Function):
    """`value`, returned in `buffer` (which a later call overwrites), with `value`'s gradient."""

    @staticmethod
    def forward(ctx, value, buffer):
        buffer.copy_(value)
        return buffer.view_as(buffer)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class StandInCapture:
    """Records each capture; its replay runs the LSTM and returns the final states in reused buffers."""

    def __init__(self) -> None:
        self.shapes: list[tuple[int, ...]] = []

    def __call__(self, lstm, inputs, h, c):
        self.shapes.append(tuple(inputs.shape))
        buffers: dict[str, torch.Tensor] = {}

        def replay(x, h0, c0):
            outputs, (h_n, c_n) = lstm(x, (h0, c0))
            for name, value in (("h", h_n), ("c", c_n)):
                buffers.setdefault(name, torch.empty_like(value, requires_grad=False))
            return outputs, IntoBuffer.apply(h_n, buffers["h"]), IntoBuffer.apply(c_n, buffers["c"])

        return replay


def graphed(capture: StandInCapture) -> GraphedRecurrence:
    return GraphedRecurrence(capture=capture, device_type="cpu")


@pytest.fixture
def lstm():
    torch.manual_seed(0)
    return torch.nn.LSTM(8, 12, proj_size=4, batch_first=True, bidirectional=True).train()


def window(rows=3, length=5):
    return torch.randn(rows, length, 8, requires_grad=True)


def test_a_shape_is_captured_once_it_repeats_and_other_shapes_run_eagerly(lstm):
    capture = StandInCapture()
    recurrence = graphed(capture)
    for _ in range(CAPTURE_AFTER - 1):
        recurrence(lstm, window(), None, None)
    assert capture.shapes == []  # seen once: it may be the last batch of an epoch
    recurrence(lstm, window(), None, None)
    assert capture.shapes == [(3, 5, 8)]
    for _ in range(3):  # replayed, not captured again
        recurrence(lstm, window(), None, None)
    for _ in range(3):  # the last, shorter batch, however often: one graph per layer is kept
        recurrence(lstm, window(rows=2), None, None)
    assert capture.shapes == [(3, 5, 8)] and recurrence.num_graphs == 1


@pytest.mark.parametrize(
    "case", ["eval mode", "no gradients", "input without gradients", "disabled", "another device"]
)
def test_calls_that_a_training_graph_cannot_serve_run_eagerly(lstm, case):
    capture = StandInCapture()
    recurrence = GraphedRecurrence(
        enabled=case != "disabled", capture=capture, device_type="cuda" if case == "another device" else "cpu"
    )
    if case == "eval mode":
        lstm.eval()
    for _ in range(CAPTURE_AFTER + 2):
        inputs = window().detach() if case == "input without gradients" else window()
        with torch.set_grad_enabled(case != "no gradients"):
            outputs, (h, c) = recurrence(lstm, inputs, None, None)
        expected, (expected_h, _) = lstm(inputs, None)
        torch.testing.assert_close(outputs, expected)
        torch.testing.assert_close(h, expected_h)
    assert capture.shapes == []


def test_the_graphed_layer_computes_the_eager_one_over_carried_states(lstm):
    """Values and gradients over windows whose states carry on, as in BTBPTT; the states outlive a replay."""
    recurrence = graphed(StandInCapture())
    torch.manual_seed(1)
    windows = [window() for _ in range(5)]
    kept = []
    eager_state = graphed_state = None
    for inputs in windows:
        results = []
        for run, state in (
            (lambda x, s: lstm(x, s), eager_state),
            (lambda x, s: recurrence(lstm, x, None, s), graphed_state),
        ):
            lstm.zero_grad()
            x = inputs.detach().clone().requires_grad_()
            outputs, (h, c) = run(x, state)
            (outputs.square().sum() + h.sum() + 2 * c.sum()).backward()
            results.append(
                (
                    outputs.detach(),
                    h.detach(),
                    c.detach(),
                    x.grad,
                    [p.grad.clone() for p in lstm.parameters()],
                )
            )
        (eager, graph) = results
        for expected, actual in zip(eager[:4], graph[:4]):
            torch.testing.assert_close(actual, expected)
        for expected, actual in zip(eager[4], graph[4]):
            torch.testing.assert_close(actual, expected)
        eager_state, graphed_state = (eager[1], eager[2]), (graph[1], graph[2])
        kept.append((graph[1], graph[1].clone()))
    assert recurrence.num_graphs == 1
    for state, value in kept:  # a state handed out is not overwritten by a later replay
        assert torch.equal(state, value)


def test_moved_weights_are_captured_again(lstm):
    capture = StandInCapture()
    recurrence = graphed(capture)
    for _ in range(CAPTURE_AFTER):
        recurrence(lstm, window(), None, None)
    for parameter in lstm.parameters():  # what `.to(...)` does: same parameters, new storage
        parameter.data = parameter.data.clone()
    for _ in range(CAPTURE_AFTER):
        recurrence(lstm, window(), None, None)
    assert len(capture.shapes) == 2 and recurrence.num_graphs == 1  # the stale graph is dropped


def test_a_capture_that_fails_leaves_the_layer_eager_with_a_warning(lstm, caplog):
    def failing(*_):
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    recurrence = GraphedRecurrence(capture=failing, device_type="cpu")
    with caplog.at_level(logging.WARNING):
        for _ in range(CAPTURE_AFTER + 3):
            inputs = window()
            outputs, _ = recurrence(lstm, inputs, None, None)
            torch.testing.assert_close(outputs, lstm(inputs)[0])
    assert [record.message for record in caplog.records].count(
        "Capturing the LSTM in a CUDA graph failed; it runs eagerly from now on: CUDA error: operation not "
        "permitted when stream is capturing"
    ) == 1


def test_the_encoder_graphs_only_batches_without_padding():
    """Padded batches need packing (the backward direction starts at each row's last token): never graphed."""
    torch.manual_seed(0)
    encoder = MaskedElmoEncoder(input_dim=8, cells=12, num_layers=2, dropout=0.0, cpu_recurrence=False)
    eager = MaskedElmoEncoder(
        input_dim=8, cells=12, num_layers=2, dropout=0.0, cpu_recurrence=False, cuda_graphs=False
    )
    eager.load_state_dict(encoder.state_dict())
    captures = []
    for layer in encoder.layers:
        capture = StandInCapture()
        layer.recurrence = RecurrenceOptions(False, graphed(capture))
        captures.append(capture)
    padded = torch.ones(3, 5, dtype=torch.bool)
    padded[2, 3:] = False
    for mask in (padded, padded, None, torch.ones(3, 5, dtype=torch.bool), None):
        embeddings = torch.randn(3, 5, 8, requires_grad=True)
        representations, states = encoder(embeddings, mask)
        expected, expected_states = eager(embeddings, mask)
        torch.testing.assert_close(representations[-1], expected[-1])
        torch.testing.assert_close(states[-1][1], expected_states[-1][1])
    assert [capture.shapes for capture in captures] == [[(3, 5, 8)], [(3, 5, 8)]]
