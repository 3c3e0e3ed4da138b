"""maelmo_plugin/arena/table.py: the arena's table from made-up finished runs, against the rule by hand."""

import json

import pytest

from maelmo_plugin.arena import table, verdicts
from maelmo_plugin.arena.plan import read_plan
from maelmo_plugin.arena.runs import FineTuning, Pretraining
from tests import PROJECT_ROOT

RATES = {"lstm": 0.01, "masked_elmo": 0.01}


@pytest.fixture
def plan(monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    return read_plan(str(PROJECT_ROOT / "tests" / "fixtures" / "arena" / "tiny_glue.jsonnet"))


def finished(folder, **metrics):
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps(metrics))
    (folder / "model.tar.gz").write_bytes(b"")


def arena(tmp_path, models=("MaskedLanguageModel", "MaskedLanguageModel"), glue=None):
    """A finished arena: perplexities lstm 100, 104 and masked_elmo 110, 111 at seeds 1 and 2; GLUE scores from
    `glue`: {(encoder, mode): (seed 1, seed 2)}."""
    for arm, scores in (("lstm", (100.0, 104.0)), ("masked_elmo", (110.0, 111.0))):
        for seed, score in zip((1, 2), scores):
            finished(Pretraining(arm, 0.01, seed).folder(tmp_path), validation_perplexity=score)
    for (encoder, mode), scores in (glue or {}).items():
        arm = encoder.removeprefix("untrained_")
        for seed, score in zip((1, 2), scores):
            run = FineTuning(arm, 0.01, seed, "rte", mode, encoder != arm)
            finished(run.folder(tmp_path), validation_glue_score=score)
    counts = {
        name: {"total": 1000, "encoder": 500, "model": model}
        for name, model in zip(("lstm", "masked_elmo"), models)
    }
    (tmp_path / "parameters.json").write_text(json.dumps({"arms": counts, "mismatch": False}))
    tuning = {"unigram_floor": 400.0, "arms": {arm: {"learned": True} for arm in RATES}}
    (tmp_path / "tuning.json").write_text(json.dumps(tuning))
    return tmp_path


def test_the_perplexity_row_is_the_rule_on_the_paired_seeds(plan, tmp_path):
    made = table.arena_table(plan, arena(tmp_path), RATES)
    row = made["comparisons"][0]
    expected = verdicts.verdict([100.0 - 110.0, 104.0 - 111.0], -1, None, "-")
    assert row["comparison"] == "lstm − masked_elmo" and row["what"] == table.PERPLEXITY
    assert row["mean"] == pytest.approx(expected.mean) and row["pairs"] == 2
    assert row["interval"] == [pytest.approx(expected.low, abs=1e-3), pytest.approx(expected.high, abs=1e-3)]
    assert row["detectable"] == pytest.approx(expected.detectable, abs=1e-3)
    assert row["verdict"] == ("lstm better" if expected.direction == verdicts.SUPPORTS else "cannot tell")
    assert made["arms"][0]["perplexity"] == 102.0 and made["arms"][1]["perplexity"] == 110.5


def test_a_difference_the_seeds_tell_names_the_better_arm(plan, tmp_path):
    glue = {
        ("lstm", "ft"): (0.60, 0.70),
        ("untrained_lstm", "ft"): (0.50, 0.601),
        ("masked_elmo", "ft"): (0.70, 0.801),
        ("untrained_masked_elmo", "ft"): (0.50, 0.60),
    }
    made = table.arena_table(plan, arena(tmp_path, glue=glue), RATES)
    row = next(row for row in made["comparisons"] if row["what"].startswith("GLUE ft"))
    # lstm − masked_elmo: -10.0 and -10.1 (x 100): the interval excludes zero on masked_elmo's side
    assert row["mean"] == pytest.approx(-10.05) and row["verdict"] == "masked_elmo better"
    assert {gate["result"] for gate in row["gates"].values()} == {verdicts.PASSES}
    assert made["arms"][1]["glue_ft"] == pytest.approx(75.05) and made["arms"][1]["untrained_glue_ft"] == 55.0


def test_an_arm_that_does_not_beat_its_untrained_architecture_gets_no_verdict(plan, tmp_path):
    glue = {
        ("lstm", "ft"): (0.50, 0.55),
        ("untrained_lstm", "ft"): (0.60, 0.70),
        ("masked_elmo", "ft"): (0.70, 0.80),
        ("untrained_masked_elmo", "ft"): (0.50, 0.601),
    }
    row = next(
        row
        for row in table.arena_table(plan, arena(tmp_path, glue=glue), RATES)["comparisons"]
        if row["what"].startswith("GLUE ft")
    )
    assert row["verdict"] == "no verdict: lstm does not beat its untrained architecture"
    assert "mean" in row  # the interval is still shown


def test_a_gate_that_has_not_run_withholds_the_verdict(plan, tmp_path):
    glue = {("lstm", "fz"): (0.5, 0.6), ("masked_elmo", "fz"): (0.6, 0.7)}
    row = next(
        row
        for row in table.arena_table(plan, arena(tmp_path, glue=glue), RATES)["comparisons"]
        if row["what"].startswith("GLUE fz")
    )
    assert row["verdict"].startswith("no verdict until the gate of lstm, masked_elmo has run")


def test_language_models_of_two_kinds_are_not_compared_on_perplexity(plan, tmp_path):
    made = table.arena_table(
        plan, arena(tmp_path, models=("MaskedLanguageModel", "ElmoLanguageModel")), RATES
    )
    assert table.PERPLEXITY not in {row["what"] for row in made["comparisons"]}


def test_a_comparison_under_two_seeds_says_so(plan, tmp_path):
    made = arena(tmp_path)
    (Pretraining("lstm", 0.01, 2).folder(made) / "metrics.json").unlink()
    row = table.arena_table(plan, made, RATES)["comparisons"][0]
    assert row["verdict"] == verdicts.TOO_FEW and row["pairs"] == 1


def test_the_markdown_table_shows_every_arm_and_comparison(plan, tmp_path):
    text = table.write_table(plan, arena(tmp_path), RATES)
    assert (tmp_path / "verdicts.md").read_text() == text
    assert "| lstm | 1,000 | 0.01 | 102.0 | – (–) | – (–) |" in text
    assert "| lstm − masked_elmo | final validation perplexity |" in text
    assert json.loads((tmp_path / "verdicts.json").read_text())["unigram_floor"] == 400.0


def test_the_table_encoders_md_shows_is_the_committed_arenas_and_redraws_from_its_json():
    committed = PROJECT_ROOT / "examples" / "encoder_arena" / "results"
    text = (committed / "verdicts.md").read_text()
    assert table.markdown(json.loads((committed / "verdicts.json").read_text())) == text
    assert text in (PROJECT_ROOT / "docs" / "encoders.md").read_text()
    tuning = json.loads((committed / "tuning.json").read_text())
    assert all(arm["learned"] and arm["at_the_grid_edge"] is None for arm in tuning["arms"].values())
