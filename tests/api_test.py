import numpy as np
import pytest
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import Archive
from allennlp.predictors import Predictor

from maelmo_plugin.api import MaskedElmo
from maelmo_plugin.lm.modules.recurrence import cpu, reduced_precision
from maelmo_plugin.lm.modules.recurrence.inference import float_products

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A cat sleeps.",
    "The unbelievable king lived in Berlin.",
]


def predicted(archive: Archive, name: str, json_dict, **options):
    return Predictor.from_archive(archive, name, extra_args=options).predict_json(json_dict)


@pytest.mark.parametrize(
    "options, shape",
    [
        ({}, (3, 6, 16)),
        ({"layer": 1}, (6, 16)),
        ({"layer": "mix"}, (6, 16)),
        ({"layer": -1, "pool": "mean"}, (4, 16)),
        ({"layer": -1, "pool": "sentence"}, (16,)),
        ({"pool": "sentence"}, (3, 16)),
    ],
)
def test_embed_gives_the_predictors_vectors(fill_mask_elmo, fill_mask_loaded, options, shape):
    (vectors,) = fill_mask_elmo.embed([SENTENCES[1]], **options)  # [CLS] A cat sleeps . [SEP]
    expected = predicted(fill_mask_loaded, "maelmo_representations", {"sentence": SENTENCES[1]}, **options)
    assert isinstance(vectors, np.ndarray) and vectors.shape == shape
    np.testing.assert_allclose(vectors, np.array(expected["vectors"]), rtol=1e-5, atol=1e-6)


def test_batch_size_does_not_change_the_vectors(fill_mask_elmo):
    one_by_one = fill_mask_elmo.embed(SENTENCES, batch_size=1)
    together = fill_mask_elmo.embed(SENTENCES, batch_size=32)
    assert [v.shape for v in one_by_one] == [v.shape for v in together]
    for alone, batched in zip(one_by_one, together):
        np.testing.assert_allclose(alone, batched, rtol=1e-5, atol=1e-5)


def test_a_document_of_5000_word_pieces_embeds_in_one_call_as_in_one_piece(fill_mask_elmo, monkeypatch):
    # Inference makes the input products 1,024 positions at a time (bounded memory); the vectors must be those
    # of the whole input at once, what the training pass computes. No window, no truncation.
    sentence = "The unbelievable king lived in Berlin near the river."
    pieces = len(fill_mask_elmo._reader.tokenizer.batch_encodings([sentence])[0].ids)
    document = " ".join([sentence] * -(-4998 // pieces))
    rows = []  # the positions of each input product

    def counted_products(*args):
        layer = float_products(*args)
        counted = [
            lambda x, product=product: rows.append(x.size(0)) or product(x) for product in layer.inputs
        ]
        return layer._replace(inputs=counted)

    with monkeypatch.context() as patch:
        patch.setitem(reduced_precision.PRODUCTS, "fp32", counted_products)
        (chunked,) = fill_mask_elmo.embed([document])
    assert chunked.shape[:2] == (3, 2 + pieces * -(-4998 // pieces)) and chunked.shape[1] >= 5000
    chunk = cpu.INFERENCE_CHUNK_ROWS
    # 2 layers x 2 directions, each in chunks of `chunk` positions
    assert max(rows) == chunk and len(rows) == 2 * 2 * -(-chunked.shape[1] // chunk)
    monkeypatch.setattr(cpu, "INFERENCE_CHUNK_ROWS", 10**9)
    (whole,) = fill_mask_elmo.embed([document])
    np.testing.assert_allclose(chunked, whole, rtol=0, atol=1e-5)
    (sentence_vector,) = fill_mask_elmo.embed([document], layer=-1, pool="sentence")
    # The reference in float64: numpy's float32 mean down a column of 5,000 drifts by about 3e-6.
    np.testing.assert_allclose(
        sentence_vector, whole[-1].mean(axis=0, dtype=np.float64), rtol=1e-6, atol=1e-6
    )


def test_fill_mask_gives_the_predictors_answer(fill_mask_elmo, fill_mask_loaded):
    result = fill_mask_elmo.fill_mask("The king lived in [MASK].", top_k=3)
    assert result == predicted(
        fill_mask_loaded, "maelmo_fill_mask", {"sentence": "The king lived in [MASK]."}, top_k=3
    )
    assert result["masks"][0]["wordpieces"][0] == "Berlin"


@pytest.mark.parametrize(
    "sentences, message",
    [
        ("A cat sleeps.", "sentences must be a list of strings, got str"),
        (["A cat.", 3], r"sentences\[1\] must be a string, got 3"),
        (["A cat.", "A dog.", " "], r"sentences\[2\] is empty"),
    ],
)
def test_bad_sentences_are_clear_errors(fill_mask_elmo, sentences, message):
    with pytest.raises(ValueError, match=message):
        fill_mask_elmo.embed(sentences, batch_size=2)


def test_bad_options_are_configuration_errors(fill_mask_elmo):
    with pytest.raises(ConfigurationError, match="pool must be null"):
        fill_mask_elmo.embed(SENTENCES, pool="last")
    with pytest.raises(ConfigurationError, match="got 7"):
        fill_mask_elmo.embed(SENTENCES, layer=7)
    with pytest.raises(ConfigurationError, match="precision must be one of 'fp32', 'int8', 'bf16', 'auto'"):
        fill_mask_elmo.embed(SENTENCES, precision="half")


@pytest.mark.parametrize("precision", ["int8", "auto"])
def test_reduced_precision_keeps_the_order_and_shapes(fill_mask_elmo, precision):
    """Reduced precision's error is tested in tests/lm/modules/recurrence/reduced_precision_test.py; here the wiring."""
    sentences = [SENTENCES[1], SENTENCES[0], SENTENCES[2], SENTENCES[1]]
    reduced = fill_mask_elmo.embed(sentences, layer=-1, batch_size=2, precision=precision)
    exact = fill_mask_elmo.embed(sentences, layer=-1, batch_size=2)
    assert [v.shape for v in reduced] == [v.shape for v in exact] == [(6, 16), (12, 16), (20, 16), (6, 16)]
    for reduced_vectors, exact_vectors in zip(reduced, exact):
        cosine = (reduced_vectors * exact_vectors).sum(-1) / (
            np.linalg.norm(reduced_vectors, axis=-1) * np.linalg.norm(exact_vectors, axis=-1)
        )
        # the fixture's int8 tolerance (MIN_COSINE in tests/lm/modules/recurrence/reduced_precision_test.py)
        assert cosine.min() > 0.98 and not np.array_equal(reduced_vectors, exact_vectors)


def test_fill_mask_errors(fill_mask_elmo, elmo_lm_archive):
    with pytest.raises(ValueError, match=r"sentence has no \[MASK\]"):
        fill_mask_elmo.fill_mask("A cat sleeps.")
    with pytest.raises(ValueError, match="sentence must be a string"):
        fill_mask_elmo.fill_mask(["A", "[MASK]"])  # type: ignore
    baseline = MaskedElmo.from_archive(elmo_lm_archive)
    assert baseline.embed([SENTENCES[1]])[0].shape[:2] == (3, 6)
    with pytest.raises(ConfigurationError, match="needs a Masked ELMo archive"):
        baseline.fill_mask("A [MASK] sleeps.")
