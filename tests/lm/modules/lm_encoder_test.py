"""
The encoders' contract (`LmEncoder`): mypy checks their signatures against it; these tests check what runs,
the calls a language model makes and the reduced-precision capability that `isinstance` reads.
"""

import pytest
import torch

from maelmo_plugin.lm.modules import ElmoBiLmEncoder, MaskedElmoEncoder
from maelmo_plugin.lm.modules.lm_encoder import LmEncoder, ReducedPrecisionLmEncoder
from maelmo_plugin.lm.modules.transformer_encoder import TransformerEncoder

ENCODERS = {
    "masked_elmo": lambda: MaskedElmoEncoder(input_dim=8, cells=12),
    "elmo": lambda: ElmoBiLmEncoder(input_dim=8, cells=12),
    "transformer": lambda: TransformerEncoder(
        input_dim=8, num_layers=2, num_attention_heads=2, intermediate_dim=16, max_positions=16
    ),
}


@pytest.mark.parametrize("name", ENCODERS)
def test_every_encoder_returns_the_layers_it_announces(name):
    encoder: LmEncoder = ENCODERS[name]()
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    representations, _ = encoder(torch.randn(2, 5, encoder.get_input_dim()), mask)
    assert len(representations) == encoder.num_layers + 1
    assert {tuple(layer.shape) for layer in representations} == {(2, 5, encoder.get_output_dim())}


def test_only_the_masked_elmo_encoder_reduces_its_precision():
    reduced = {name: isinstance(make(), ReducedPrecisionLmEncoder) for name, make in ENCODERS.items()}
    assert reduced == {"masked_elmo": True, "elmo": False, "transformer": False}
