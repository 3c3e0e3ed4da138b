"""
The reduced-precision products, and their documented tolerances (docs/performance.md), on the fixture
Masked ELMo trained on the repetitive corpus (d = 16, so 8 values per direction: LayerNorm over so few makes
the relative error larger than at real sizes).
"""

import numpy as np
import pytest
import torch
from allennlp.common.checks import ConfigurationError

from maelmo_plugin.lm.modules.masked_elmo_encoder import MaskedElmoEncoder
from maelmo_plugin.lm.modules.recurrence import reduced_precision
from maelmo_plugin.lm.modules.recurrence.inference import float_products
from maelmo_plugin.lm.modules.recurrence.reduced_precision import (
    bf16_products,
    int8_products,
    resolve_precision,
)

# The documented tolerances: the smallest cosine similarity between a token's vector (any layer) and its
# fp32 vector, and between a sentence's vectors in a padded batch and alone. Measured on this fixture: int8
# 0.9994 against fp32 and 0.9995 padded against alone on an AVX-512 EPYC (fbgemm's AVX2 kernels round
# differently: about 0.013 lower on an AVX2 EPYC); bf16 1.0000, and padded equal to alone. The fixture's
# weights decide these (tests/fixtures/lm/fill_mask_experiment.jsonnet says which draw).
MIN_COSINE = {"int8": 0.98, "bf16": 0.999}
MIN_COSINE_PADDED_VS_ALONE = {"int8": 0.98, "bf16": 0.9999}

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A cat sleeps.",
    "The king lived in Berlin near the river.",
    "The unbelievable cat, sleeps on the house of the king in Berlin.",
    "A dog eats a fish.",
]


def cosines(actual: list[np.ndarray], expected: list[np.ndarray]) -> np.ndarray:
    """Per token and layer: the cosine similarity of the two vectors."""
    a = np.concatenate([vectors.reshape(-1, vectors.shape[-1]) for vectors in actual])
    b = np.concatenate([vectors.reshape(-1, vectors.shape[-1]) for vectors in expected])
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


@pytest.mark.parametrize("precision", ["int8", "bf16"])
def test_vectors_are_within_the_documented_cosine_of_fp32(fill_mask_elmo, precision):
    expected = fill_mask_elmo.embed(SENTENCES)
    actual = fill_mask_elmo.embed(SENTENCES, precision=precision)
    assert [vectors.shape for vectors in actual] == [vectors.shape for vectors in expected]
    assert cosines(actual, expected).min() >= MIN_COSINE[precision]
    # The embedding layer is not reduced; the LSTM layers are.
    for reduced, full in zip(actual, expected):
        np.testing.assert_array_equal(reduced[0], full[0])
    assert not np.allclose(actual[0][-1], expected[0][-1], atol=1e-5)


@pytest.mark.parametrize("precision", ["int8", "bf16"])
def test_a_padded_batch_is_within_the_documented_cosine_of_each_sentence_alone(fill_mask_elmo, precision):
    batched = fill_mask_elmo.embed(SENTENCES, precision=precision)
    alone = [fill_mask_elmo.embed([sentence], precision=precision)[0] for sentence in SENTENCES]
    assert cosines(batched, alone).min() >= MIN_COSINE_PADDED_VS_ALONE[precision]


@pytest.mark.parametrize("products, tolerance", [(int8_products, 0.03), (bf16_products, 0.01)])
def test_each_product_approximates_the_float32_product(products, tolerance):
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(32, 64, proj_size=16, batch_first=True, bidirectional=True)
    reduced, exact = products(lstm, 8, 5), float_products(lstm, 8, 5)
    for reduced_kind, exact_kind, width in zip(reduced, exact, (32, 16, 64)):
        for reduced_product, exact_product in zip(reduced_kind, exact_kind):
            rows = torch.randn(8, width)
            expected = exact_product(rows)
            error = (reduced_product(rows) - expected).norm() / expected.norm()
            assert 0 < error < tolerance


def test_weights_are_converted_once_and_again_after_they_change(monkeypatch):
    lstm = torch.nn.LSTM(8, 12, proj_size=4, batch_first=True, bidirectional=True)
    conversions = []
    original = reduced_precision._int8_weights
    monkeypatch.setattr(
        reduced_precision, "_int8_weights", lambda lstm: conversions.append(1) or original(lstm)
    )
    rows = torch.randn(3, 4)
    before = int8_products(lstm, 3, 2).recurrent[0](rows)
    int8_products(lstm, 3, 2)
    assert len(conversions) == 1
    with torch.no_grad():
        lstm.weight_hh_l0.mul_(2)
    after = int8_products(lstm, 3, 2).recurrent[0](rows)
    assert len(conversions) == 2
    torch.testing.assert_close(after, 2 * before, rtol=0.05, atol=0.05)


# The option.


@pytest.mark.parametrize("value", ["int4", "FP32", None, 8])
def test_a_bad_precision_names_the_option_and_the_allowed_values(value):
    with pytest.raises(
        ConfigurationError, match=r"precision must be one of 'fp32', 'int8', 'bf16', 'auto', got"
    ):
        resolve_precision(value, None)


def test_auto_is_int8_the_faster_on_every_cpu_measured_bf16_natively_or_not(monkeypatch):
    # int8 embedded faster than bf16 on AVX2, on AVX512_BF16 and on AMX (docs/performance.md): "auto" is the
    # fast choice, bf16 the accurate one, asked for by name.
    for native in (True, False):
        monkeypatch.setattr(reduced_precision, "native_bf16", lambda native=native: native)
        assert resolve_precision("auto", None) == "int8"
    assert resolve_precision("auto", "the model is on cuda:0") == "fp32"
    assert resolve_precision("fp32", "the model is on cuda:0") == "fp32"


def test_a_model_that_cannot_reduce_says_why():
    with pytest.raises(
        ConfigurationError, match=r"precision 'int8' .* but the model is on cuda:0: use 'fp32'"
    ):
        resolve_precision("int8", "the model is on cuda:0")


def test_the_encoder_refuses_reduced_precision_where_it_cannot_apply():
    inputs = torch.randn(2, 5, 8)
    elmo_cell = MaskedElmoEncoder(input_dim=8, cells=12, cell="elmo")
    assert elmo_cell.reduced_precision_refusal(torch.device("cpu")) == "this encoder has the 'elmo' cell"
    fused = MaskedElmoEncoder(input_dim=8, cells=12)
    assert fused.reduced_precision_refusal(torch.device("cpu")) is None
    assert "cuDNN" in fused.reduced_precision_refusal(torch.device("cuda", 0))
    with pytest.raises(ValueError, match="precision 'int8' is for inference: run the encoder under"):
        fused(inputs, precision="int8")
    with torch.no_grad(), pytest.raises(ValueError, match="precision must be one of"):
        fused(inputs, precision="int4")
    with torch.inference_mode():
        representations, _ = fused.eval()(inputs, precision="bf16")
    assert len(representations) == 3
