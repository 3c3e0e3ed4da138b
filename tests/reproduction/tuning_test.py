"""reproduction/tuning.py: the rule that picks each encoder's arena rate from its sweep."""

import pytest

from reproduction import RESULTS, tuning


def run(rate, final, variant=None):
    return {"name": f"x-lr{rate}", "variant": variant, "lr": rate, "curve": [{"perplexity": final}]}


def test_the_lowest_perplexity_wins_unless_a_lower_rate_is_within_one_percent():
    assert tuning.chosen("masked_elmo", [run(1e-3, 94.3), run(2e-3, 95.7), run(5e-4, 109.8)])["lr"] == 1e-3
    # 132.0 is 0.2% above 131.7: a tie, and the lower rate takes it
    assert tuning.chosen("masked_elmo", [run(4e-3, 132.0), run(8e-3, 131.7)])["lr"] == 4e-3
    # 133.1 is 1.06% above: no tie
    assert tuning.chosen("masked_elmo", [run(4e-3, 133.1), run(8e-3, 131.7)])["lr"] == 8e-3
    assert tuning.chosen("masked_elmo", []) is None


def test_the_elmo_biLM_is_chosen_among_its_zero_state_runs_only():
    runs = [run(8e-3, 100.0, "adam"), run(4e-3, 140.0, "zero"), run(2e-3, 150.0, "zero")]
    assert tuning.chosen("elmo", runs)["lr"] == 4e-3


@pytest.mark.skipif(not (RESULTS / "tuning").exists(), reason="the committed tuning results")
def test_on_the_committed_sweeps_the_rule_changes_the_elmo_biLMs_rate_alone():
    runs = tuning.load_tuning(RESULTS / "tuning")
    picks = {
        encoder: (
            tuning.chosen(encoder, runs[encoder])["lr"],
            tuning.chosen(encoder, runs[encoder])["variant"],
        )
        for encoder in runs
    }
    assert picks == {"masked_elmo": (1e-3, None), "bert": (1e-3, "post"), "elmo": (4e-3, "zero")}
