"""
The Hugging Face export's code on a CUDA device: `lstm_implementation="auto"` runs cuDNN's `nn.LSTM` there,
and must give what the CPU recurrence gives on a CPU, values and gradients, for every head. Marked `gpu`.
"""

import warnings

import pytest
import torch

from maelmo_plugin.hf.configuration_masked_elmo import MaskedElmoConfig
from maelmo_plugin.hf.modeling_masked_elmo import (
    MaskedElmoForMaskedLM,
    MaskedElmoForSequenceClassification,
)
from tests.hf.modeling_masked_elmo_test import ATTENTION_MASK, INPUT_IDS, SPECIAL_IDS, values_and_gradients

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def model_and_labels(head_class):
    torch.manual_seed(0)
    # Dropout off, so that both devices compute the same function; training mode all the same, since cuDNN's
    # LSTM runs its backward only in training mode (what Trainer uses).
    config = MaskedElmoConfig(
        vocab_size=20,
        hidden_size=16,
        cell_size=24,
        hidden_dropout_prob=0.0,
        classifier_dropout=0.0,
        **SPECIAL_IDS,
    )
    model = head_class(config).train()
    if head_class is MaskedElmoForSequenceClassification:
        return model, torch.tensor([1, 0])
    return model, INPUT_IDS.masked_fill(INPUT_IDS < 5, -100)  # no special token as a target


@pytest.mark.parametrize("head_class", [MaskedElmoForMaskedLM, MaskedElmoForSequenceClassification])
def test_auto_runs_cudnn_on_a_gpu_with_the_cpu_recurrences_values_and_gradients(head_class, monkeypatch):
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    model, labels = model_and_labels(head_class)
    assert model.config.lstm_implementation == "auto"
    on_cpu = [t.detach().clone() for t in values_and_gradients(model, INPUT_IDS, ATTENTION_MASK, labels)]
    lstm_calls = []
    forward = torch.nn.LSTM.forward
    monkeypatch.setattr(
        torch.nn.LSTM, "forward", lambda self, *a, **k: lstm_calls.append(self) or forward(self, *a, **k)
    )
    model.cuda()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        on_gpu = values_and_gradients(model, INPUT_IDS.cuda(), ATTENTION_MASK.cuda(), labels.cuda())
    assert len(lstm_calls) == 2  # cuDNN's LSTM, one call per layer
    assert not [w for w in caught if "LSTM" in str(w.message)], [str(w.message) for w in caught]
    for gpu, cpu in zip(on_gpu, on_cpu):
        # float32 sums in another order: 1e-5 of the tensor's scale (gradients reach about 100 here)
        torch.testing.assert_close(gpu.cpu(), cpu, rtol=0, atol=1e-5 * max(1.0, cpu.abs().max().item()))


def test_a_trainer_step_under_bf16_autocast_on_a_gpu_lowers_the_loss():
    """`Trainer(bf16=True)` on a GPU: the forward under bf16 autocast, the parameters and optimizer in fp32."""
    model, labels = model_and_labels(MaskedElmoForSequenceClassification)
    model.cuda().train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    inputs = dict(input_ids=INPUT_IDS.cuda(), attention_mask=ATTENTION_MASK.cuda(), labels=labels.cuda())
    losses = []
    for _ in range(20):
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(**inputs).loss
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(torch.isfinite(torch.tensor(losses))) and losses[-1] < 0.5 * losses[0], losses
