"""
The Masked ELMo encoder on a CUDA device, where its layers run cuDNN's LSTM on packed sequences, against the
same weights on the CPU, where they run the plugin's own recurrence: the two must be one function. Marked
`gpu` (`pytest -m gpu` where a CUDA device is present).
"""

import pytest
import torch

from maelmo_plugin.lm.modules.masked_elmo_encoder import MaskedElmoEncoder

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def encoder_and_batch():
    torch.manual_seed(0)
    encoder = MaskedElmoEncoder(input_dim=16, cells=24, num_layers=2, dropout=0.0)
    for layer in encoder.layers:  # non-trivial LayerNorm parameters, so that the comparison sees them
        torch.nn.init.normal_(layer.norm.weight)
        torch.nn.init.normal_(layer.norm.bias)
    mask = torch.ones(3, 9, dtype=torch.bool)
    mask[1, 5:] = False
    mask[2, 2:] = False
    embeddings = torch.randn(3, 9, 16) * mask.unsqueeze(-1)
    states = [(torch.randn(2, 3, 8), torch.randn(2, 3, 24)) for _ in range(2)]
    return encoder, embeddings, mask, states


def values_and_gradients(encoder, embeddings, mask, states):
    """Every layer's representations, the final states, and the gradients of a loss that reads them all."""
    encoder.zero_grad()
    embeddings = embeddings.clone().requires_grad_()
    representations, final_states = encoder(embeddings, mask, states)
    weights = torch.linspace(-1, 1, representations[-1].size(-1), device=embeddings.device)
    loss = sum((layer * weights).sum() for layer in representations[1:])
    loss = loss + sum(h.sum() + c.sum() for h, c in final_states)
    loss.backward()
    grads = [embeddings.grad] + [parameter.grad for parameter in encoder.parameters()]
    return [t.detach().cpu() for t in representations + [x for s in final_states for x in s] + grads]


def test_cudnn_on_packed_rows_is_the_cpu_recurrences_function_values_and_gradients(full_float32):
    encoder, embeddings, mask, states = encoder_and_batch()
    on_cpu = values_and_gradients(encoder, embeddings, mask, states)
    cuda = torch.device("cuda")
    on_gpu = values_and_gradients(
        encoder.to(cuda), embeddings.to(cuda), mask.to(cuda), [(h.to(cuda), c.to(cuda)) for h, c in states]
    )
    assert len(on_cpu) == len(on_gpu)
    for gpu, cpu in zip(on_gpu, on_cpu):
        # float32 sums in another order: 1e-5 of the tensor's scale (gradients reach about 100 here)
        torch.testing.assert_close(gpu, cpu, rtol=0, atol=1e-5 * max(1.0, cpu.abs().max().item()))


def test_bf16_autocast_stays_close_to_fp32_and_padding_stays_out(full_float32):
    """What the GPU configs' AMP does to the encoder: cuDNN's LSTM in half precision."""
    encoder, embeddings, mask, _ = encoder_and_batch()
    encoder, embeddings, mask = encoder.cuda().eval(), embeddings.cuda(), mask.cuda()
    with torch.no_grad():
        fp32, _ = encoder(embeddings, mask)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            bf16, _ = encoder(embeddings, mask)
            alone, _ = encoder(embeddings[1:2, :5])
    for reduced, full in zip(bf16[1:], fp32[1:]):
        cosine = torch.nn.functional.cosine_similarity(reduced.float()[mask], full[mask], dim=-1)
        assert cosine.min() > 0.99, cosine.min()
        assert reduced[~mask].abs().sum() == 0  # padding reads nothing and writes nothing
    for padded, single in zip(bf16, alone):  # a padded row is the row alone, at bf16's resolution
        torch.testing.assert_close(padded[1, :5].float(), single[0].float(), rtol=2e-2, atol=2e-2)
