"""
The LSTM replayed from CUDA graphs against the same LSTM run eagerly, on a GPU: values, final states and
gradients over windows whose states carry on (BTBPTT), under fp32 and under bf16 autocast with its cache on
(as AllenNLP's trainer runs it); a shape change falls back to eager; and whole `allennlp train` runs with
graphs on and off. Marked `gpu` (`pytest -m gpu` where a CUDA device is present).
"""

import json

import pytest
import torch

from maelmo_plugin.lm.modules.masked_elmo_encoder import MaskedElmoEncoder
from tests.training.distributed_test import B, config, largest_difference, train

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def encoders():
    torch.manual_seed(0)
    graphed = (
        MaskedElmoEncoder(input_dim=32, cells=48, num_layers=2, dropout=0.0, cuda_graphs=True).cuda().train()
    )
    eager = MaskedElmoEncoder(input_dim=32, cells=48, num_layers=2, dropout=0.0, cuda_graphs=False)
    eager.load_state_dict(graphed.state_dict())
    return graphed, eager.cuda().train()


def step(encoder, embeddings, states, autocast):
    """One window: representations, final states and gradients of a loss that reads them all."""
    encoder.zero_grad()
    embeddings = embeddings.clone().requires_grad_()
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
        representations, final_states = encoder(
            embeddings, torch.ones(embeddings.shape[:2], dtype=torch.bool, device="cuda"), states
        )
        loss = sum(layer.float().square().mean() for layer in representations[1:])
        loss = loss + sum(h.float().sum() + c.float().sum() for h, c in final_states)
    loss.backward()
    values = [r.detach().float() for r in representations] + [
        t.detach().float() for s in final_states for t in s
    ]
    gradients = [embeddings.grad] + [p.grad.clone() for p in encoder.parameters()]
    carried = [tuple(t.detach() for t in s) for s in final_states]
    return values, gradients, carried


def assert_close_to_scale(actual, expected, tolerance):
    for a, e in zip(actual, expected):
        assert (a - e).abs().max().item() <= tolerance * max(e.abs().max().item(), 1e-6)


@pytest.mark.parametrize("autocast, tolerance", [(False, 1e-5), (True, 2e-2)])
def test_graphed_windows_equal_eager_ones_with_carried_states(full_float32, autocast, tolerance):
    graphed, eager = encoders()
    torch.manual_seed(1)
    windows = [torch.randn(4, 16, 32, device="cuda") for _ in range(6)]
    graphed_states = eager_states = None
    for embeddings in windows:
        g_values, g_grads, graphed_states = step(graphed, embeddings, graphed_states, autocast)
        e_values, e_grads, eager_states = step(eager, embeddings, eager_states, autocast)
        assert_close_to_scale(g_values, e_values, tolerance)
        assert_close_to_scale(g_grads, e_grads, tolerance)
    assert [layer.recurrence.graphs.num_graphs for layer in graphed.layers] == [1, 1]


def test_a_shape_change_falls_back_to_eager(full_float32):
    graphed, eager = encoders()
    for rows, length in ((4, 16), (4, 16), (4, 16), (3, 16), (4, 9), (4, 16)):
        embeddings = torch.randn(rows, length, 32, device="cuda")
        g_values, g_grads, _ = step(graphed, embeddings, None, False)
        e_values, e_grads, _ = step(eager, embeddings, None, False)
        assert_close_to_scale(g_values, e_values, 1e-5)
        assert_close_to_scale(g_grads, e_grads, 1e-5)
    assert [layer.recurrence.graphs.num_graphs for layer in graphed.layers] == [1, 1]
    with torch.no_grad():  # evaluation: eager
        graphed.eval()(torch.randn(4, 16, 32, device="cuda"))


def test_training_with_graphs_ends_with_the_weights_of_eager_training(tmp_path):
    """Through `allennlp train`: fp32, deterministic kernels, k = 4 sequential mask accumulation (the same
    shape k times per update) and carried states."""
    runs = {}
    for graphs in (True, False):
        config_file = config(
            tmp_path / str(graphs), k=4, mode="sequential", cuda_device=0, deterministic=True
        )
        overrides = {
            "trainer.use_amp": False,
            "data_loader.batch_size": 2 * B,
            "model.encoder.cuda_graphs": graphs,
        }
        runs[graphs], _ = train(tmp_path / f"run_{graphs}", config_file, overrides)
    assert largest_difference(runs[True], runs[False]) < 1e-5


def test_amp_pretraining_with_graphs_lowers_the_masked_perplexity(tmp_path):
    run = tmp_path / "run"
    overrides = {"data_loader.batch_size": 2 * B, "trainer.num_epochs": 3, "model.encoder.cuda_graphs": True}
    train(run, config(tmp_path, cuda_device=0), overrides)
    assert json.loads((run / "config.json").read_text())["trainer"]["use_amp"] is True
    epochs = [json.loads((run / f"metrics_epoch_{epoch}.json").read_text()) for epoch in range(3)]
    assert epochs[2]["training_perplexity"] < epochs[0]["training_perplexity"]
    assert "Captured a layer's LSTM in a CUDA graph" in (run / "out.log").read_text()
