"""
The task heads of an export (docs/hf_finetuning.md), fine-tuned with `Trainer` and used through pipelines
under transformers 4.x and 5.x without AllenNLP or the plugin: `train_heads.py` runs once per version in a
subprocess, and the tests read what it measured.

Each head, loaded from the fixture export, must hold the export's encoder and a head initialised as
`_init_weights` says (the mix the plain average, the classifier normal(0, 0.02) with a zero bias). `Trainer`
fine-tunes it from a fresh head on a tiny in-memory data set (seed 0; 40 steps, batch 4, learning rate
3e-2), once per problem type (single label, regression on pairs, multi-label, and the tagger): the
training-set loss must fall below 0.85 of the best input-blind prediction's, and the model's loss must equal
a hand-written cross-entropy, MSE or binary cross-entropy for the problem type. One update of two
accumulated batches must log the mean loss of the 8 examples (the sum, were the loss not divided). The
pipelines must name labels by `id2label` and give the model's own answers, and none may log "not
supported"; a saved head must reload with the same weights. With `-s` they print the training-set loss
before and after, and the time:

    .venv/bin/python -m pytest tests/hf/heads_test.py -s -k fine_tunes | grep -o "transformers [45].*"
"""

from pathlib import Path
from statistics import mean
from typing import Any

import pytest

from tests.hf import run_without_plugin

TRAIN_HEADS = Path(__file__).parent / "train_heads.py"
# (result key, run, problem type): the runs train_heads.py makes, each from a fresh head.
RUNS = [
    ("sequence", "single_label", "single_label_classification"),
    ("sequence", "regression", "regression"),
    ("sequence", "multi_label", "multi_label_classification"),
    ("token", "training", None),
]


@pytest.fixture(scope="module", params=["4", "5"])
def trained(request, masked_elmo_export, tmp_path_factory) -> dict[str, Any]:
    """What `train_heads.py` measured under transformers 4.x (the venv's) or 5.x."""
    work = tmp_path_factory.mktemp(f"heads_transformers{request.param}")
    return run_without_plugin(TRAIN_HEADS, {"export": masked_elmo_export}, request.param, work)


def test_a_head_loaded_from_an_export_has_its_encoder_and_a_fresh_head(trained):
    assert trained["fast_tokenizer"]  # word-level aggregation in the token-classification pipeline needs it
    for head in ("sequence", "token"):
        start = trained[head]["start"]
        assert start["encoder_loaded"]  # the export's weights, not a random encoder
        assert start["mix_weights"] == [0.0, 0.0, 0.0] and start["scale"] == [1.0]  # the plain average
        assert not any(start["classifier_bias"])
        assert 0.01 < start["classifier_std"] < 0.03  # normal(0, initializer_range = 0.02), as BERT


@pytest.mark.parametrize("head, run, problem_type", RUNS)
def test_trainer_fine_tunes_each_head(trained, head, run, problem_type):
    result = trained[head][run]
    before, after = result["before"]["hand_loss"], result["after"]["hand_loss"]
    constant = result["after"]["constant_loss"]
    logged = result["logged"]
    print(
        f"transformers {trained['transformers_version']}: {head} {run} training-set loss {before:.4f} -> "
        f"{after:.4f} (best input-blind prediction {constant:.4f}); logged mean of first 5 "
        f"{mean(logged[:5]):.4f}, last 5 {mean(logged[-5:]):.4f}; {trained['steps']} steps in "
        f"{result['seconds']:.1f} s"
    )
    assert len(logged) == trained["steps"]
    # Below the loss of the labels' own distribution: the head reads the encoder, not only label frequencies.
    assert after < 0.85 * constant and after < before
    assert mean(logged[-5:]) < mean(logged[:5])
    # The loss is BERT's for the problem type, inferred as BERT infers it: num_labels 1 gives regression
    # (mean squared error), integer labels cross-entropy, float multi-hot labels binary cross-entropy.
    assert result["problem_type"] == problem_type
    for state in ("before", "after"):
        assert result[state]["model_loss"] == pytest.approx(result[state]["hand_loss"], rel=1e-5)


def test_gradient_accumulation_logs_the_mean_loss(trained):
    # One update of 2 x 4 examples in two accumulated batches, logged before the update changes anything:
    # the mean loss of the 8. A loss not divided by the accumulation steps would log the sum, twice that.
    accumulation = trained["sequence"]["accumulation"]
    expected = accumulation["expected"]["hand_loss"]
    assert accumulation["logged"] == [pytest.approx(expected, abs=1e-4)]  # 4.x rounds logs to 4 decimals


def test_the_text_classification_pipeline_gives_the_labels_of_id2label(trained):
    result = trained["sequence"]["pipeline"]
    assert result["pair_is_cls_a_sep_b_sep"]  # a pair is one sequence, as for BERT
    # A sentence, then a pair: the model's own answer on the tokenizer's encoding, named by id2label.
    for answer, expected in zip(result["answers"], result["expected"]):
        assert answer["label"] == expected["label"] and answer["label"] in {"cat", "dog", "fish"}
        assert answer["score"] == pytest.approx(expected["score"], abs=1e-5)
    assert result["answers"][0]["label"] == "dog"  # "The dog eats near the river.", after fine-tuning
    # The export names its classes where the pipeline looks: no "not supported for text-classification".
    assert result["unsupported_errors"] == []


def test_the_token_classification_pipeline_groups_entities_with_id2label_names(trained):
    result = trained["token"]
    assert len(result["pieces"]) > 1  # names span several word-pieces: only the first one is labelled
    expected = result["expected_groups"]
    assert {group["entity_group"] for group in expected} == {"PER", "ANIMAL", "PLACE"}
    # "first" is word-level: each word takes its first piece's tag, the alignment it was trained with.
    assert result["first"] == expected
    # "simple" groups adjacent pieces, not words: the one-piece words come out whole.
    one_piece = [group for group in expected if group["entity_group"] != "PER"]
    assert [group for group in result["simple"] if group["entity_group"] != "PER"] == one_piece
    assert {group["entity_group"] for group in result["simple"]} == {"PER", "ANIMAL", "PLACE"}
    assert result["unsupported_errors"] == []  # nor "not supported for token-classification"


def test_a_saved_head_reloads_to_the_same_model(trained):
    for head, labels in (
        ("sequence", ["cat", "dog", "fish"]),
        ("token", ["O", "B-ANIMAL", "B-PLACE", "B-PER"]),
    ):
        result = trained[head]["reload"]
        assert result["weights_equal"]
        # Equal weights; the logits may differ by float rounding (1.2e-7 and 2.4e-7 seen for the tagger).
        assert result["max_difference"] < 1e-6
        assert result["id2label"] == {str(index): label for index, label in enumerate(labels)}
    assert trained["sequence"]["reload"]["problem_type"] == "single_label_classification"
