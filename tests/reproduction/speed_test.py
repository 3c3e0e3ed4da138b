"""reproduction/speed.py and its campaign: speed read past the first updates, from short runs of each arm's own
config, interleaved seed by seed."""

import pytest

from reproduction import campaigns, runner
from reproduction.arena import TUNING_RECIPE_BERT, resolved
from reproduction.campaigns import PRE_LN_BERT
from reproduction.speed import ARENA_UPDATES, arena_budget_minutes, steady_speed, update_seconds
from tests.reproduction import run_config, wikitext_here


def run_with(points):
    return {
        "name": "masked_elmo-seed1",
        "validation_curve": [
            {"updates": updates, "wordpieces": wordpieces, "cpu_seconds": seconds, "perplexity": 100.0}
            for updates, wordpieces, seconds in points
        ],
    }


def test_speed_is_read_past_the_first_point_so_the_first_updates_one_off_costs_do_not_count():
    # 41 updates of 2,048 word-pieces in 100 s (kernel selection, allocation), then 41 more in 50 s
    run = run_with([(41, 41 * 2048, 100.0), (82, 82 * 2048, 150.0)])
    assert steady_speed(run) == pytest.approx(41 * 2048 / 50)
    assert update_seconds(run) == pytest.approx(50 / 41)
    assert arena_budget_minutes(run) == pytest.approx(50 / 41 * ARENA_UPDATES / 60)


def test_a_run_with_a_single_point_has_no_speed_to_read():
    run = run_with([(41, 41 * 2048, 100.0)])
    assert steady_speed(run) is None and arena_budget_minutes(run) is None


def test_the_speed_campaign_times_each_arms_own_config_on_short_text_interleaved_seed_by_seed(
    tmp_path, monkeypatch
):
    wikitext_here(tmp_path, monkeypatch)
    monkeypatch.setattr(runner, "RUNS", tmp_path / "runs")

    def config(claim, run):
        run = resolved(run) if "tuned" in run else run
        params = run_config(claim, run)
        paths = params.pop("train_data_path"), params.pop("validation_data_path")
        return params, paths

    arena = {run["name"]: run for run in campaigns.all_claims()["arena_encoders"]}
    cell = {run["name"]: run for run in campaigns.claims()["cell"]}
    speed = campaigns.all_claims()["speed"]
    # Every arena encoder and every cell arm, at each seed, one seed's arms before the next seed's
    assert [run["name"].rsplit("-seed", 1)[1] for run in speed] == sorted(
        run["name"].rsplit("-seed", 1)[1] for run in speed
    )
    for run in speed:
        timed, (train, validation) = config("speed", run)
        name = run["name"]
        encoder, seed = name.rsplit("-seed", 1)
        if name.startswith("cell_"):
            same = cell[name.removeprefix("cell_")]
        else:  # the arena's run at that seed (the arena itself has seeds 1 to 3); BERT*'s at the recipe timed:
            # `bert` its post-LN record's, `bert_pre_ln` the arena's (its budget's choice)
            record = {"bert": TUNING_RECIPE_BERT["name"], PRE_LN_BERT: "bert"}.get(encoder, encoder)
            same = arena.get(f"{record}-seed{seed}") or {**arena[f"{record}-seed1"], "seed": int(seed)}
            same = {**same, "name": name}
        own, _ = config("cell" if name.startswith("cell_") else "arena_encoders", same)
        assert timed == own  # the arm's config: model, optimizer, rate, batch, windows, epochs, seed
        assert train.endswith("wikitext2-timing-1200.txt") and validation.endswith(
            "wikitext2-valid_timing-100.txt"
        )
    names = {run["name"] for run in speed}
    assert {
        f"{encoder}-seed{seed}" for encoder in ("masked_elmo", "bert", "elmo") for seed in (1, 2, 3)
    } <= names
    assert {f"cell_{arm}-seed{seed}" for arm in ("fused-elmo_init", "elmo") for seed in (1, 2, 3)} <= names
    assert {f"{encoder}-seed{seed}" for encoder in ("masked_elmo", "bert") for seed in (4, 5, 6)} <= names
    # the arena's pre-LN BERT*, to pair with Masked ELMo's 6 seeds: pre-LN where `bert` is post-LN
    assert {f"{PRE_LN_BERT}-seed{seed}" for seed in range(1, 7)} <= names
    layer_norms = {
        name: config("speed", run)[0]["model"]["encoder"]["layer_norm"]
        for run in speed
        if (name := run["name"]) in ("bert-seed1", f"{PRE_LN_BERT}-seed1")
    }
    assert layer_norms == {"bert-seed1": "post", f"{PRE_LN_BERT}-seed1": "pre"}
