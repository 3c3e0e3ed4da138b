import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import Archive, load_archive
from allennlp.predictors import Predictor

from maelmo_plugin.lm.predictors.fill_mask import FillMaskPredictor


def predictor(archive: Archive, **options) -> FillMaskPredictor:
    return Predictor.from_archive(archive, "maelmo_fill_mask", extra_args=options)  # type: ignore


@pytest.mark.parametrize(
    "sentence, position, answer",
    [
        ("The king lived in [MASK].", 5, "Berlin"),  # left context
        ("The [MASK] sleeps on the house.", 2, "cat"),  # right context: "The" alone could be king or cat
        ("A dog [MASK] a fish.", 3, "eats"),  # both sides
    ],
)
def test_the_repetitive_corpus_makes_the_answer_obvious(fill_mask_loaded, sentence, position, answer):
    output = predictor(fill_mask_loaded).predict_json({"sentence": sentence})
    (mask,) = output["masks"]
    assert mask["position"] == position and output["wordpieces"][position] == "[MASK]"
    assert mask["wordpieces"][0] == answer and mask["probabilities"][0] > 0.5
    assert len(mask["wordpieces"]) == len(mask["probabilities"]) == 5  # top_k defaults to 5
    assert mask["probabilities"] == sorted(mask["probabilities"], reverse=True)


def test_probabilities_are_the_tied_softmax_over_the_top_layer(fill_mask_loaded):
    model = fill_mask_loaded.model
    output = predictor(fill_mask_loaded, top_k=3).predict_json(
        {"tokens": ["The", "king", "lived", "in", "[MASK]", "."]}
    )
    assert output["wordpieces"] == ["[CLS]", "The", "king", "lived", "in", "[MASK]", ".", "[SEP]"]
    ids = torch.tensor([[model.vocab.get_token_index(piece, "wordpieces") for piece in output["wordpieces"]]])
    with torch.no_grad():
        top = model.representations(ids, ids != 0)[-1][0, 5]
        logits = top @ model._embedding.weight.T + model._output_bias
    # The special word-pieces ([PAD] [UNK] [CLS] [SEP] [MASK]: ids 0-4 of the fixture vocabulary) are out.
    probabilities = torch.softmax(logits[5:], dim=-1)
    best, best_ids = probabilities.topk(3)
    best_ids = best_ids + 5
    (mask,) = output["masks"]
    assert mask["wordpieces"] == [model.vocab.get_token_from_index(int(i), "wordpieces") for i in best_ids]
    torch.testing.assert_close(torch.tensor(mask["probabilities"]), best)


def test_special_wordpieces_are_never_proposed(fill_mask_loaded):
    (mask,) = predictor(fill_mask_loaded, top_k=186).predict_json({"sentence": "[MASK] [MASK] cat."})[
        "masks"
    ][:1]
    assert not any(piece.startswith("[") for piece in mask["wordpieces"])
    assert sum(mask["probabilities"]) == pytest.approx(1.0, abs=1e-5)  # every non-special piece, all the mass


def test_every_mask_of_a_sentence_is_filled(fill_mask_loaded):
    output = predictor(fill_mask_loaded, top_k=2).predict_json(
        {"sentence": "The [MASK] sleeps on the [MASK]."}
    )
    assert [mask["position"] for mask in output["masks"]] == [2, 6]
    assert all(len(mask["wordpieces"]) == 2 for mask in output["masks"])
    assert output["masks"][1]["wordpieces"][0] == "house"


def test_batch_results_equal_one_by_one_results(fill_mask_loaded):
    inputs = [
        {"sentence": "The king lived in [MASK]."},
        {"sentence": "She likes the green [MASK] very much."},
    ]
    batched = predictor(fill_mask_loaded).predict_batch_json(inputs)
    for json_dict, output in zip(inputs, batched):
        alone = predictor(fill_mask_loaded).predict_json(json_dict)
        assert output["wordpieces"] == alone["wordpieces"]
        assert output["masks"][0]["wordpieces"] == alone["masks"][0]["wordpieces"]
        assert output["masks"][0]["probabilities"] == pytest.approx(
            alone["masks"][0]["probabilities"], rel=1e-5
        )


def test_a_sentence_without_mask_is_a_clear_error(fill_mask_loaded):
    with pytest.raises(ValueError, match=r'input 2, field "sentence" has no \[MASK\]'):
        predictor(fill_mask_loaded).predict_batch_json(
            [{"sentence": "A [MASK] cat."}, {"sentence": "A cat."}]
        )


def test_bad_input_is_a_clear_error_naming_the_field(fill_mask_loaded):
    with pytest.raises(ValueError, match='input 1, field "sentence" is empty'):
        predictor(fill_mask_loaded).predict_json({"sentence": ""})


@pytest.mark.parametrize("top_k", [0, -1, 2.5, 187, 10_000])
def test_bad_top_k_is_a_configuration_error(fill_mask_loaded, top_k):
    # 191 entries, 5 of them special and never proposed.
    with pytest.raises(
        ConfigurationError,
        match=rf"top_k must be an integer from 1 to 186 \(the vocabulary less its 5 special .*got {top_k}",
    ):
        predictor(fill_mask_loaded, top_k=top_k)


def test_an_elmo_lm_archive_is_refused(elmo_lm_archive):
    with pytest.raises(ConfigurationError, match="needs a Masked ELMo archive.*holds a ElmoLanguageModel"):
        predictor(load_archive(elmo_lm_archive))
