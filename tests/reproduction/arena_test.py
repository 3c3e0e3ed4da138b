"""reproduction/arena.py and runner.py: the fair arena's encoders take the tuning campaign's choice."""

import json

from reproduction import arena, runner, tuning
from tests.reproduction import budget_kept, run_config, wikitext_here


def sweep(results, finals):
    """Kept tuning results: {run name: final validation perplexity}."""
    for name, final in finals.items():
        (results / "tuning" / name).mkdir(parents=True)
        point = {"updates": 550, "epoch": 3, "wordpieces": 1, "cpu_seconds": 1.0, "perplexity": final}
        (results / "tuning" / name / "validation_curve.json").write_text(json.dumps([point]))


BERT_SWEEP = {
    f"bert_{norm}-lr{rate}": final
    for norm, finals in (("post", (600, 500, 450, 700)), ("pre", (500, 400, 350, 380)))
    for rate, final in zip(("2.5e-4", "5e-4", "1e-3", "2e-3"), finals)
}
# BERT*'s budget (e): every recipe at 300 but pre-LN 4e-3 with a warm-up of 1,000 at 250.
BUDGET = {arena.bert_budget_name(*recipe): (300.0, 301.0) for recipe in arena.BERT_BUDGET}
BUDGET["pre-lr4e-3-warmup1000-linear"] = (250.0, 255.0)


def test_the_arenas_bert_star_waits_for_its_whole_budget_then_runs_its_choice_and_the_record_does_not(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(arena, "RESULTS", tmp_path)
    runs = {run["name"]: run for run in arena.arena_encoder_runs()}
    budget_kept(tmp_path, {name: BUDGET[name] for name in list(BUDGET)[:10]})
    assert arena.budget_recipe() is None and arena.resolved(runs["bert-seed2"]) is None
    # The record runs the tuning campaign's recipe whatever the budget gives, and is what the budget shares.
    assert arena.resolved(runs["bert_tuning_recipe-seed2"]) is not None
    assert runs["bert_tuning_recipe-seed1"]["fixed"] == ("post", "1e-3", 250, "linear")
    budget_kept(tmp_path, {name: BUDGET[name] for name in list(BUDGET)[10:]})
    assert arena.budget_recipe() == ("pre", "4e-3", 1000, "linear")
    assert arena.resolved(runs["bert-seed2"])["name"] == "bert-seed2"


def test_an_encoder_waits_for_its_whole_sweep_then_takes_its_lowest_final_perplexity(tmp_path, monkeypatch):
    monkeypatch.setattr(arena, "RESULTS", tmp_path)
    sweep(tmp_path, {"bert_post-lr5e-4": 300.0})
    assert arena.tuned("bert") is None  # 1 of 8 runs kept: no choice yet
    assert arena.resolved({"name": "bert-seed2", "tuned": "bert", "seed": 2}) is None
    sweep(tmp_path, {name: final for name, final in BERT_SWEEP.items() if name != "bert_post-lr5e-4"})
    assert arena.tuned("bert") == (0.0005, "post")  # the 300 kept first is the lowest
    assert arena.tuned("masked_elmo") is None


def test_an_arena_encoder_is_the_small_config_at_its_tuned_rate_on_all_of_wikitext2(tmp_path, monkeypatch):
    monkeypatch.setattr(arena, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(runner, "RUNS", tmp_path / "runs")
    elmo = {
        f"elmo_adagrad-lr{rate}": final
        for rate, final in (("0.05", 300), ("0.1", 250), ("0.2", 260), ("0.4", 270))
    }
    _, adam_rates = tuning.TUNING["elmo_adam"]  # 1e-3 the lowest (200), 10 higher for each step away
    elmo |= {
        f"elmo_adam-lr{rate}": 200 + 10 * abs(index - adam_rates.index("1e-3"))
        for index, rate in enumerate(adam_rates)
    }
    # From zero states 4e-3 is the lowest (220), above the stateful Adam's 200: the arena takes 4e-3.
    elmo |= {
        "elmo_zero-lr2e-3": 230,
        "elmo_zero-lr4e-3": 220,
        "elmo_zero-lr8e-3": 240,
        "elmo_zero-lr1.6e-2": 250,
    }
    sweep(tmp_path / "results", {**BERT_SWEEP, **elmo})
    budget_kept(tmp_path / "results", BUDGET)
    wikitext = wikitext_here(tmp_path, monkeypatch)
    runs = {run["name"]: run for run in arena.arena_encoder_runs()}
    bert = run_config("arena_encoders", arena.resolved(runs["bert-seed3"]))
    # BERT* at its budget's choice: pre-LN, AdamW 4e-3, a warm-up of 1,000, linear decay
    assert bert["model"]["encoder"]["layer_norm"] == "pre" and bert["trainer"]["optimizer"]["lr"] == 0.004
    assert bert["trainer"]["learning_rate_scheduler"] == {"type": "linear_with_warmup", "warmup_steps": 1000}
    assert bert["random_seed"] == 3 and bert["trainer"]["num_epochs"] == 2
    assert bert["train_data_path"] == str(wikitext / "train.txt")
    record = run_config("arena_encoders", arena.resolved(runs["bert_tuning_recipe-seed3"]))
    assert (
        record["model"]["encoder"]["layer_norm"] == "post" and record["trainer"]["optimizer"]["lr"] == 0.001
    )
    assert record["trainer"]["learning_rate_scheduler"] == {"type": "linear_with_warmup", "warmup_steps": 250}
    assert record["random_seed"] == 3
    elmo = run_config("arena_encoders", arena.resolved(runs["elmo-seed1"]))
    assert elmo["model"]["type"] == "maelmo_elmo_lm" and elmo["trainer"]["optimizer"] == {
        "type": "adam",
        "lr": 0.004,
    }
    assert elmo["trainer"]["learning_rate_scheduler"] == {"type": "exponential", "gamma": 0.95}
    # every window from zero states, as GLUE reads it, on the stateful runs' batches
    assert elmo["model"]["carry_states_in_training"] is False and elmo["data_loader"]["stateful"] is True
    assert "score_stateful" not in arena.resolved(runs["elmo-seed1"])  # no carried states to read with
    assert "score_stateful" not in arena.resolved(runs["bert-seed3"])
    # The record of the first, stateful biLM: its own rate, ELMo's carried states, also scored as it trained
    # (states carried over 64-token windows, left to right).
    stateful = arena.resolved(runs["elmo_stateful-seed2"])
    config = run_config("arena_encoders", stateful)
    assert (
        config["trainer"]["optimizer"]["lr"] == 0.008 and config["model"]["carry_states_in_training"] is True
    )
    assert config["random_seed"] == 2
    assert stateful["score_stateful"] == {
        "model.carry_states_in_evaluation": True,
        "validation_data_loader.stateful": True,
        "validation_data_loader.sequence_length": 64,
        "validation_data_loader.batch_size": 32,
        "validation_data_loader.bidirectional": False,
    }


def test_an_architecture_is_the_arena_config_on_a_tiny_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(arena, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(runner, "RUNS", tmp_path / "runs")
    sweep(tmp_path / "results", {**BERT_SWEEP, "elmo_zero-lr4e-3": 130.0})
    wikitext_here(tmp_path, monkeypatch)
    monkeypatch.setattr(arena, "tuned", lambda encoder: (0.001, "zero"))
    monkeypatch.setattr(arena, "budget_recipe", lambda: ("pre", "1e-3", 250, "linear"))
    runs = {run["name"]: run for run in arena.arena_encoder_runs()}
    (bert,) = [run for run in arena.architecture_runs() if run["name"] == "bert"]
    tiny = run_config("architectures", arena.resolved(bert))
    full = run_config("arena_encoders", arena.resolved(runs["bert-seed1"]))
    assert tiny["model"] == full["model"] and tiny["vocabulary"] == full["vocabulary"]
    assert tiny["train_data_path"].endswith("wikitext2-tiny-100.txt")
    assert tiny["validation_data_path"] == full["validation_data_path"]
    # The record biLM: 8e-3 from zero states, whatever the tuning now chooses
    record = run_config("arena_encoders", arena.resolved(runs["elmo_lr8e3-seed3"]))
    assert (
        record["trainer"]["optimizer"]["lr"] == 0.008 and record["model"]["carry_states_in_training"] is False
    )
    assert record["random_seed"] == 3


def test_bert_star_is_tuned_again_on_the_budget_it_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "RUNS", tmp_path / "runs")
    wikitext = wikitext_here(tmp_path, monkeypatch)
    runs = {run["name"]: run for run in arena.bert_budget_runs(shared=True)}
    assert len(runs) == len(arena.BERT_BUDGET) == 11
    constant = run_config("bert_budget", runs["pre-lr4e-3-warmup250-constant"])
    assert constant["trainer"]["learning_rate_scheduler"] == {
        "type": "constant_with_warmup",
        "num_warmup_steps": 250,
    }
    assert (
        constant["model"]["encoder"]["layer_norm"] == "pre"
        and constant["trainer"]["optimizer"]["lr"] == 0.004
    )
    linear = run_config("bert_budget", runs["post-lr1e-3-warmup1000-linear"])
    assert linear["trainer"]["learning_rate_scheduler"] == {
        "type": "linear_with_warmup",
        "warmup_steps": 1000,
    }
    assert linear["trainer"]["num_epochs"] == 2 and linear["train_data_path"] == str(wikitext / "train.txt")


def test_the_budget_reads_the_arenas_bert_star_at_seed_1_rather_than_running_it_again(tmp_path, monkeypatch):
    """The budget's post-LN 1e-3, warm-up 250, linear recipe at seed 1 is the arena's bert-seed1 (the committed
    tuning's choice), config for config; so the campaign leaves it out and the drawing reads the arena's run."""
    monkeypatch.setattr(runner, "RUNS", tmp_path / "runs")
    wikitext_here(tmp_path, monkeypatch)
    campaign = {run["name"] for run in arena.bert_budget_runs()}
    every = {run["name"]: run for run in arena.bert_budget_runs(shared=True)}
    assert (
        sorted(set(every) - campaign) == sorted(arena.BERT_BUDGET_SHARED) == ["post-lr1e-3-warmup250-linear"]
    )
    for name, arena_name in arena.BERT_BUDGET_SHARED.items():
        in_the_arena = arena.resolved({run["name"]: run for run in arena.arena_encoder_runs()}[arena_name])
        budget = run_config("bert_budget", every[name])
        assert budget == run_config("arena_encoders", in_the_arena)


def test_the_arenas_bert_star_at_seed_1_is_its_budgets_chosen_run_config_for_config(tmp_path, monkeypatch):
    monkeypatch.setattr(arena, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(runner, "RUNS", tmp_path / "runs")
    wikitext_here(tmp_path, monkeypatch)
    budget_kept(tmp_path / "results", BUDGET)
    assert arena.budget_twin("arena_encoders", "bert-seed1") == (
        "bert_budget",
        "pre-lr4e-3-warmup1000-linear",
    )
    assert arena.budget_twin("arena_encoders", "bert-seed2") is None
    assert arena.budget_twin("arena_glue", "bert-seed1") is None
    runs = {run["name"]: run for run in arena.arena_encoder_runs()}
    budget = {run["name"]: run for run in arena.bert_budget_runs()}
    in_the_arena = run_config("arena_encoders", arena.resolved(runs["bert-seed1"]))
    assert in_the_arena == run_config("bert_budget", budget["pre-lr4e-3-warmup1000-linear"])
