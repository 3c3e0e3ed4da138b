"""
`ScanMaskedElmoEncoder`, the encoder as the ONNX export writes it, computes what `MaskedElmoEncoder` computes:
in torch, without ONNX (tests/onnx/export_test.py checks the exported graph in ONNX Runtime).
"""

import pytest
import torch

from maelmo_plugin.lm.modules.masked_elmo_encoder import MaskedElmoEncoder
from maelmo_plugin.onnx.scan_encoder import ScanMaskedElmoEncoder

LENGTHS = [9, 3, 7, 1, 0]  # a full row, padded rows, a one-token row and a row of padding only


def _models(dtype: torch.dtype):
    torch.manual_seed(0)
    encoder = MaskedElmoEncoder(input_dim=16, cells=24, num_layers=2, dropout=0.0).to(dtype).eval()
    embedding = torch.nn.Embedding(40, 16, padding_idx=0).to(dtype)
    # Non-trivial LayerNorm gains and biases, so that swapping the directions' halves would show.
    for layer in encoder.layers:
        torch.nn.init.normal_(layer.norm.weight)
        torch.nn.init.normal_(layer.norm.bias)
    return embedding, encoder, ScanMaskedElmoEncoder(embedding, list(encoder.layers)).eval()


def _padded_batch(lengths):
    torch.manual_seed(1)
    width = max(lengths)
    mask = torch.arange(width).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    return torch.randint(5, 40, (len(lengths), width)) * mask, mask


@pytest.mark.parametrize("dtype, tolerance", [(torch.float64, 1e-12), (torch.float32, 1e-5)])
def test_it_gives_the_plugins_representations_of_a_padded_batch(dtype, tolerance):
    embedding, encoder, scan_encoder = _models(dtype)
    token_ids, mask = _padded_batch(LENGTHS)
    with torch.no_grad():
        expected = torch.stack(encoder(embedding(token_ids), mask)[0])
        actual = scan_encoder(token_ids, mask.long())
    assert actual.shape == (3, len(LENGTHS), max(LENGTHS), 16) and actual.dtype == dtype
    assert float((actual - expected).abs().max()) <= tolerance
    assert bool((actual[:, ~mask] == 0).all())  # every layer, h_0 included, is zero at padding


def test_a_padded_row_gives_the_vectors_of_the_row_alone():
    _, _, scan_encoder = _models(torch.float64)
    token_ids, mask = _padded_batch(LENGTHS)
    with torch.no_grad():
        batch = scan_encoder(token_ids, mask.long())
        for row, length in enumerate(LENGTHS[:-1]):
            alone = scan_encoder(token_ids[row : row + 1, :length], mask[row : row + 1, :length].long())
            assert torch.allclose(batch[:, row, :length], alone[:, 0], rtol=0, atol=1e-12)


def test_only_the_fused_cell_is_accepted():
    encoder = MaskedElmoEncoder(input_dim=16, cells=24, num_layers=1, cell="elmo")
    with pytest.raises(ValueError, match="fused cell"):
        ScanMaskedElmoEncoder(torch.nn.Embedding(40, 16), list(encoder.layers))
