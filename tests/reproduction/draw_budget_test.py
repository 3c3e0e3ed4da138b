"""reproduction/draw_budget.py: (e) BERT*'s recipes on the budget it runs, on made-up validation curves."""

import pytest

from reproduction import draw_report
from reproduction.arena import BERT_BUDGET, bert_budget_name, budget_choice, load_budget
from reproduction.draw_budget import budget_table, last_fall
from tests.reproduction import budget_curve, budget_kept

# Every recipe 300 and level, but pre-LN at 4e-3 (warm-up 250) at 200 and pre-LN at 8e-3 at 199 (a tie within 1%:
# the lower rate is chosen), pre-LN at 2e-3 (warm-up 1000) still falling 5% over its last 250 updates.
FINALS = {bert_budget_name(*recipe): (300.0, 300.0) for recipe in BERT_BUDGET}
FINALS.update(
    {
        "pre-lr4e-3-warmup250-linear": (200.0, 200.5),
        "pre-lr8e-3-warmup250-linear": (199.0, 199.0),
        "pre-lr2e-3-warmup1000-linear": (285.0, 300.0),
    }
)


def test_the_budget_reads_the_arenas_run_under_its_recipes_name(tmp_path):
    budget_kept(
        tmp_path,
        {"post-lr1e-3-warmup250-linear": (298.0, 310.0), "pre-lr2e-3-warmup250-linear": (250.0, 260.0)},
    )
    runs = load_budget(tmp_path)
    assert [(run["name"], run["shared"]) for run in runs] == [
        ("pre-lr2e-3-warmup250-linear", None),
        ("post-lr1e-3-warmup250-linear", "bert_tuning_recipe-seed1"),
    ]
    assert (runs[1]["variant"], runs[1]["lr"], runs[1]["warmup"], runs[1]["schedule"]) == (
        "post",
        0.001,
        250,
        "linear",
    )
    assert runs[1]["recipe"] == ("post", "1e-3", 250, "linear")


def test_the_last_fall_is_read_over_the_last_validation_interval():
    assert last_fall(budget_curve(285.0, 300.0)) == (pytest.approx(0.05), 244)
    assert last_fall(budget_curve(303.0, 300.0)) == (pytest.approx(-0.01), 244)


def test_the_choice_waits_for_every_recipe_then_takes_the_lowest_rate_among_the_tied(tmp_path):
    budget_kept(
        tmp_path, {name: final for name, final in FINALS.items() if name != "pre-lr8e-3-warmup250-linear"}
    )
    runs = load_budget(tmp_path)
    assert len(runs) == 10 and budget_choice(runs) is None
    assert "The choice waits for 1 of the 11 recipes" in budget_table(runs)
    budget_kept(tmp_path, {"pre-lr8e-3-warmup250-linear": FINALS["pre-lr8e-3-warmup250-linear"]})
    runs = load_budget(tmp_path)
    assert budget_choice(runs)["name"] == "pre-lr4e-3-warmup250-linear"  # 200 ties with 199: the lower rate
    table = budget_table(runs)
    assert (
        "| pre | 0.004 | 250 | linear | 200.0 | 0.2% in 244 updates (level) | chosen: the arena's BERT* |"
        in table
    )
    assert "| pre | 0.002 | 1000 | linear | 285.0 | 5.0% in 244 updates (still improving) |  |" in table
    assert (
        "| post | 0.001 | 250 | linear | 300.0 | 0.0% in 244 updates (level) "
        "| the tuning campaign's, the record (bert_tuning_recipe-seed1) |" in table
    )
    assert "pre-LN at 0.004, a warm-up of 250, linear: the arena's BERT* runs it." in table


def test_the_record_is_chosen_where_it_is_still_the_best(tmp_path):
    budget_kept(tmp_path, {**FINALS, "post-lr1e-3-warmup250-linear": (150.0, 151.0)})
    runs = load_budget(tmp_path)
    assert budget_choice(runs)["recipe"] == ("post", "1e-3", 250, "linear")
    assert (
        "| post | 0.001 | 250 | linear | 150.0 | 0.7% in 244 updates (level) "
        "| the tuning campaign's, the record (bert_tuning_recipe-seed1), chosen: the arena's BERT* |"
        in budget_table(runs)
    )


def test_the_report_draws_the_budget(tmp_path):
    budget_kept(
        tmp_path / "results",
        {name: final for name, final in FINALS.items() if "post-lr1e-3-warmup250" not in name},
    )
    draw_report.main(tmp_path / "results", tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert "### (e) BERT* tuned on the budget it runs" in summary
    assert "The choice waits for 1 of the 11 recipes; until then the arena's BERT* waits too." in summary
    assert (tmp_path / "figures" / "bert_budget.png").stat().st_size > 0
