import numpy as np
import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.data.dataset_readers import SequenceTaggingDatasetReader
from allennlp.models import Model
from allennlp.models.archival import Archive, load_archive
from allennlp.predictors import Predictor

from maelmo_plugin.common.wordpiece import load_wordpiece_tokenizer
from maelmo_plugin.lm.predictors.representations import RepresentationsPredictor
from tests import FIXTURES_ROOT

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A cat sleeps.",
    "The king lived in Berlin near the river.",
]


def predictor(archive: Archive, **options) -> RepresentationsPredictor:
    return Predictor.from_archive(archive, "maelmo_representations", extra_args=options)  # type: ignore


def model_layers(model, sentence):
    """The model's own representations() of `[CLS] sentence [SEP]`: (L + 1, num_tokens, dim)."""
    tokenizer = load_wordpiece_tokenizer(str(FIXTURES_ROOT / "lm" / "vocab.txt"))
    ids = torch.tensor([[2, *tokenizer(sentence, add_special_tokens=False)["input_ids"], 3]])
    with torch.no_grad():
        return torch.stack(model.eval().representations(ids, ids != 0))[:, 0].numpy()


def test_all_layers_equal_the_models_own_representations(fill_mask_loaded):
    model = fill_mask_loaded.model
    output = predictor(fill_mask_loaded).predict_json({"sentence": SENTENCES[0]})
    expected = model_layers(model, SENTENCES[0])
    assert output["wordpieces"][0] == "[CLS]" and output["wordpieces"][-1] == "[SEP]"
    assert np.array(output["vectors"]).shape == expected.shape == (3, len(output["wordpieces"]), 16)
    np.testing.assert_allclose(np.array(output["vectors"]), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layer", [0, 1, 2, -1])
def test_one_layer(fill_mask_loaded, layer):
    expected = model_layers(fill_mask_loaded.model, SENTENCES[1])[layer]
    output = predictor(fill_mask_loaded, layer=layer).predict_json({"sentence": SENTENCES[1]})
    np.testing.assert_allclose(np.array(output["vectors"]), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "options",
    [
        {"layer": "mix", "scalar_mix_parameters": [0.0, 1.0, 2.0]},
        {"scalar_mix_parameters": [0.0, 1.0, 2.0]},
        {"layer": "mix"},
    ],
)
def test_scalar_mix_is_the_softmax_weighted_sum_of_the_layers(fill_mask_loaded, options):
    layers = model_layers(fill_mask_loaded.model, SENTENCES[1])
    weights = torch.softmax(torch.tensor(options.get("scalar_mix_parameters", [0.0, 0.0, 0.0])), 0).numpy()
    output = predictor(fill_mask_loaded, **options).predict_json({"sentence": SENTENCES[1]})
    np.testing.assert_allclose(
        np.array(output["vectors"]), np.tensordot(weights, layers, 1), rtol=1e-5, atol=1e-6
    )


def test_batch_results_equal_one_by_one_results(fill_mask_loaded):
    single = predictor(fill_mask_loaded)
    batched = predictor(fill_mask_loaded).predict_batch_json(
        [{"sentence": sentence} for sentence in SENTENCES]
    )
    for sentence, output in zip(SENTENCES, batched):
        alone = single.predict_json({"sentence": sentence})
        assert output["wordpieces"] == alone["wordpieces"]
        np.testing.assert_allclose(
            np.array(output["vectors"]), np.array(alone["vectors"]), rtol=1e-5, atol=1e-5
        )


def test_alignment_and_pooling_of_a_multi_piece_word(fill_mask_loaded):
    sentence = {"sentence": "The unbelievable cat, sleeps."}
    output = predictor(fill_mask_loaded).predict_json(sentence)
    # "unbelievable" is not in the fixture vocabulary: it is spelt out in 12 pieces.
    assert output["wordpieces"][:4] == ["[CLS]", "The", "u", "##n"]
    assert output["words"] == ["The", "unbelievable", "cat", ",", "sleeps", "."]
    assert output["alignment"] == [[1], list(range(2, 14)), [14], [15], [16], [17]]
    assert output["wordpieces"][14:] == ["cat", ",", "sleeps", ".", "[SEP]"]
    pieces = np.array(output["vectors"])  # (L + 1, 19, dim)
    first = np.array(predictor(fill_mask_loaded, pool="first").predict_json(sentence)["vectors"])
    mean = np.array(predictor(fill_mask_loaded, pool="mean").predict_json(sentence)["vectors"])
    assert first.shape == mean.shape == (3, 6, 16)
    np.testing.assert_allclose(first, pieces[:, [1, 2, 14, 15, 16, 17]], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mean[:, 1], pieces[:, 2:14].mean(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mean[:, 2:], pieces[:, 14:18], rtol=1e-5, atol=1e-6)
    one_layer = predictor(fill_mask_loaded, pool="mean", layer=2).predict_json(sentence)["vectors"]
    np.testing.assert_allclose(np.array(one_layer), mean[2], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layer", [None, -1, "mix"])
def test_sentence_pooling_is_the_mean_over_every_word_piece(fill_mask_loaded, layer):
    # [CLS] and [SEP] included: what sentence-transformers' mean pooling over the attention mask averages.
    sentence = {"sentence": "The unbelievable cat, sleeps."}
    pieces = np.array(predictor(fill_mask_loaded, layer=layer).predict_json(sentence)["vectors"])
    output = predictor(fill_mask_loaded, layer=layer, pool="sentence").predict_json(sentence)
    vectors = np.array(output["vectors"])
    assert vectors.shape == ((3, 16) if layer is None else (16,))
    np.testing.assert_allclose(vectors, pieces.mean(axis=-2), rtol=1e-5, atol=1e-6)
    assert len(output["wordpieces"]) == 19 and output["words"][1] == "unbelievable"


def test_pre_split_tokens_keep_the_given_words(fill_mask_loaded):
    output = predictor(fill_mask_loaded, pool="first").predict_json({"tokens": ["The", "cat,", "sleeps"]})
    assert output["wordpieces"] == ["[CLS]", "The", "cat", ",", "sleeps", "[SEP]"]
    assert output["words"] == ["The", "cat,", "sleeps"]
    assert output["alignment"] == [[1], [2, 3], [4]]
    assert np.array(output["vectors"]).shape == (3, 3, 16)


def test_a_sentence_longer_than_the_training_window_is_read_whole(fill_mask_loaded):
    sentence = " ".join(["The cat sleeps on the house."] * 8)  # 56 pieces; the windows were 16
    output = predictor(fill_mask_loaded).predict_json({"sentence": sentence})
    assert len(output["wordpieces"]) == 58
    expected = model_layers(fill_mask_loaded.model, sentence)
    np.testing.assert_allclose(np.array(output["vectors"]), expected, rtol=1e-5, atol=1e-6)


def test_an_elmo_lm_archive_gives_its_representations_too(elmo_lm_archive):
    archive = load_archive(elmo_lm_archive)
    output = predictor(archive).predict_json({"sentence": SENTENCES[1]})
    expected = model_layers(archive.model, SENTENCES[1])
    np.testing.assert_allclose(np.array(output["vectors"]), expected, rtol=1e-5, atol=1e-6)
    # Its encoder has no reduced precision: "auto" falls back to fp32, and "int8" says why not.
    assert predictor(archive, precision="auto").precision == "fp32"
    with pytest.raises(
        ConfigurationError,
        match=r"precision 'int8' .* encoder, \"maelmo_elmo_bilm\", has no reduced precision: use 'fp32'",
    ):
        predictor(archive, precision="int8")


def test_batched_vectors_sort_by_length_and_give_every_sentence_its_own_vectors(fill_mask_loaded):
    sentences = [SENTENCES[1], SENTENCES[0], "A cat sleeps on the house.", SENTENCES[2], "A dog."]
    representations = predictor(fill_mask_loaded)
    instances = representations.sentence_instances(sentences, [str(n) for n in range(len(sentences))])
    batches = []
    original = representations.vectors

    def recording(batch):
        batches.append([instance["sentence"].metadata.name for instance in batch])
        return original(batch)

    representations.vectors = recording  # type: ignore
    results = list(representations.batched_vectors(instances, batch_size=2))
    # Longest first (ties in input order), 2 at a time; each index with its own sentence's vectors.
    assert batches == [["1", "3"], ["2", "0"], ["4"]]
    assert [number for number, _ in results] == [1, 3, 2, 0, 4]
    for number, vectors in results:
        alone = original(instances[number : number + 1])[0]
        np.testing.assert_allclose(vectors, alone, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "json_dict, message",
    [
        ({"sentence": ""}, 'input 1, field "sentence" is empty'),
        ({"sentence": "  \t "}, 'input 1, field "sentence" is empty'),
        ({"sentence": 3}, 'input 1: the field "sentence" must be a string, got 3'),
        ({"sentence": ["The", "cat"]}, 'the field "sentence" must be a string'),
        ({"tokens": "The cat"}, 'the field "tokens" must be a list of words'),
        ({"tokens": []}, 'input 1, field "tokens" is an empty list'),
        ({"tokens": ["The", None]}, r'input 1, field "tokens"\[1\] must be a string \(a word\), got None'),
        ({"tokens": ["The", "\x00"]}, r'input 1, field "tokens"\[1\] \(\'\\x00\'\) gives no word-piece'),
        ({"sentence": "\x00\x01"}, 'input 1, field "sentence" gives no word-piece'),
        ({"sentence": "The [PAD] cat"}, r"contains \[PAD\]"),
        ({"text": "The cat"}, r'exactly one of the fields "sentence" .* or "tokens" .*\[\'text\'\]'),
        ({"sentence": "A cat", "tokens": ["A", "cat"]}, "exactly one of the fields"),
    ],
)
def test_bad_input_is_a_clear_error_naming_the_field(fill_mask_loaded, json_dict, message):
    with pytest.raises(ValueError, match=message):
        predictor(fill_mask_loaded).predict_json(json_dict)


def test_bad_input_names_its_input_number(fill_mask_loaded):
    with pytest.raises(ValueError, match='input 3, field "sentence" is empty'):
        predictor(fill_mask_loaded).predict_batch_json(
            [{"sentence": "A cat."}, {"sentence": "A dog."}, {"sentence": ""}]
        )


def test_a_json_line_that_is_not_an_object_is_a_clear_error(fill_mask_loaded):
    with pytest.raises(ValueError, match=r"input 1 must be a JSON object"):
        predictor(fill_mask_loaded).predict_json(["The cat"])  # type: ignore


@pytest.mark.parametrize(
    "options, message",
    [
        ({"layer": 3}, r"an integer from -3 to 2 \(the model has L \+ 1 = 3 layers\), got 3"),
        ({"layer": "top"}, "layer must be null"),
        ({"layer": True}, "layer must be null"),
        ({"scalar_mix_parameters": [1.0, 2.0]}, r"one value per layer \(3\); got layer 'mix' and 2 values"),
        ({"layer": 1, "scalar_mix_parameters": [0.0, 0.0, 0.0]}, "scalar_mix_parameters go with"),
        ({"pool": "max"}, 'pool must be null, "first", "mean" or "sentence", got \'max\''),
        ({"precision": "int4"}, r"precision must be one of 'fp32', 'int8', 'bf16', 'auto', got 'int4'"),
    ],
)
def test_bad_options_are_configuration_errors(fill_mask_loaded, options, message):
    with pytest.raises(ConfigurationError, match=message):
        predictor(fill_mask_loaded, **options)


class NotALanguageModel(Model):
    def __init__(self) -> None:
        super().__init__(Vocabulary())
        self._layer = torch.nn.Linear(2, 2)


def test_an_archive_without_a_language_model_is_refused(fill_mask_loaded):
    reader = fill_mask_loaded.validation_dataset_reader
    with pytest.raises(
        ConfigurationError, match="holds a NotALanguageModel model, not a Masked ELMo or ELMo"
    ):
        RepresentationsPredictor(NotALanguageModel(), reader)


def test_a_reader_without_a_wordpiece_tokenizer_is_refused(fill_mask_loaded):
    with pytest.raises(
        ConfigurationError, match=r"dataset reader \(SequenceTaggingDatasetReader\) has no word-piece"
    ):
        RepresentationsPredictor(fill_mask_loaded.model, SequenceTaggingDatasetReader())
