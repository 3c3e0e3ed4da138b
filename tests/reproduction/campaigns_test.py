"""reproduction/campaigns.py and runner.py: the fair arena's encoders take the tuning campaign's choice."""

import json

import torch

from reproduction import campaigns, runner
from tests.reproduction import wikitext_here
from tests.reproduction.runner_test import glue_campaign_here


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


def test_an_encoder_waits_for_its_whole_sweep_then_takes_its_lowest_final_perplexity(tmp_path, monkeypatch):
    monkeypatch.setattr(campaigns, "RESULTS", tmp_path)
    sweep(tmp_path, {"bert_post-lr5e-4": 300.0})
    assert campaigns.tuned("bert") is None  # 1 of 8 runs kept: no choice yet
    assert campaigns.resolved({"name": "bert-seed2", "tuned": "bert", "seed": 2}) is None
    sweep(tmp_path, {name: final for name, final in BERT_SWEEP.items() if name != "bert_post-lr5e-4"})
    assert campaigns.tuned("bert") == (0.0005, "post")  # the 300 kept first is the lowest
    assert campaigns.tuned("masked_elmo") is None


def test_an_arena_encoder_is_the_small_config_at_its_tuned_rate_on_all_of_wikitext2(tmp_path, monkeypatch):
    from allennlp.common import Params

    monkeypatch.setattr(campaigns, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(runner, "RUNS", tmp_path / "runs")
    elmo = {
        f"elmo_adagrad-lr{rate}": final
        for rate, final in (("0.05", 300), ("0.1", 250), ("0.2", 260), ("0.4", 270))
    }
    _, adam_rates = campaigns.TUNING["elmo_adam"]  # 1e-3 the lowest (200), 10 higher for each step away
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
    wikitext = wikitext_here(tmp_path, monkeypatch)
    runs = {run["name"]: run for run in campaigns.arena_encoder_runs()}
    bert = Params.from_file(
        str(runner.variant("arena_encoders", campaigns.resolved(runs["bert-seed3"])))
    ).as_dict()
    assert bert["model"]["encoder"]["layer_norm"] == "pre" and bert["trainer"]["optimizer"]["lr"] == 0.001
    assert bert["random_seed"] == 3 and bert["trainer"]["num_epochs"] == 2
    assert bert["train_data_path"] == str(wikitext / "train.txt")
    elmo = Params.from_file(
        str(runner.variant("arena_encoders", campaigns.resolved(runs["elmo-seed1"])))
    ).as_dict()
    assert elmo["model"]["type"] == "maelmo_elmo_lm" and elmo["trainer"]["optimizer"] == {
        "type": "adam",
        "lr": 0.004,
    }
    assert elmo["trainer"]["learning_rate_scheduler"] == {"type": "exponential", "gamma": 0.95}
    # every window from zero states, as GLUE reads it, on the stateful runs' batches
    assert elmo["model"]["carry_states_in_training"] is False and elmo["data_loader"]["stateful"] is True
    assert "score_stateful" not in campaigns.resolved(runs["elmo-seed1"])  # no carried states to read with
    assert "score_stateful" not in campaigns.resolved(runs["bert-seed3"])
    # The record of the first, stateful biLM: its own rate, ELMo's carried states, also scored as it trained
    # (states carried over 64-token windows, left to right).
    stateful = campaigns.resolved(runs["elmo_stateful-seed2"])
    config = Params.from_file(str(runner.variant("arena_encoders", stateful))).as_dict()
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


def test_an_arena_glue_run_fine_tunes_the_encoder_of_its_own_seed_pretraining_it_first(tmp_path, monkeypatch):
    trained, _ = glue_campaign_here(tmp_path, monkeypatch)
    monkeypatch.setattr(campaigns, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(runner, "resolved", lambda run: {**run, "resolved": True})
    runs = [run for run in campaigns.glue_runs("arena_glue") if run["task"] == "cola" and run["seed"] == 2]
    runner.run_campaign("arena_glue", runs, core=0)
    assert trained == [
        "arena_encoders/masked_elmo-seed2",
        "arena_glue/masked_elmo-cola-seed2",
        "arena_encoders/elmo-seed2",
        "arena_glue/elmo-cola-seed2",
        "arena_encoders/bert-seed2",
        "arena_glue/bert-cola-seed2",
        "arena_glue/random-cola-seed2",
        "arena_encoders/elmo_stateful-seed2",
        "arena_glue/elmo_stateful-cola-seed2",
        "arena_encoders/elmo_lr8e3-seed2",  # the record of the biLM at its lowest-perplexity rate
        "arena_glue/elmo_lr8e3-cola-seed2",
        # the gate: each encoder's architecture untrained, from an archive that took one tiny epoch
        "architectures/elmo",
        "arena_glue/random_elmo-cola-seed2",
        "architectures/bert",
        "arena_glue/random_bert-cola-seed2",
        # the paper's protocol: each encoder frozen, the untrained ones too
        "arena_glue/masked_elmo-fz-cola-seed2",
        "arena_glue/elmo-fz-cola-seed2",
        "arena_glue/bert-fz-cola-seed2",
        "architectures/masked_elmo",
        "arena_glue/random-fz-cola-seed2",
        "arena_glue/random_elmo-fz-cola-seed2",
        "arena_glue/random_bert-fz-cola-seed2",
    ]
    configs = tmp_path / "runs" / "arena_glue" / "configs"
    frozen = (configs / "elmo-fz-cola-seed2.jsonnet").read_text()
    assert 'encoder: "archive-fz"' in frozen and "input_size: 256" in frozen
    untrained = (configs / "random_bert-fz-cola-seed2.jsonnet").read_text()
    assert 'encoder: "random-fz"' in untrained and "input_size: 128" in untrained
    assert not (tmp_path / "results" / "architectures").exists()  # a means, not a result
    elmo_config = (tmp_path / "runs" / "arena_glue" / "configs" / "elmo-cola-seed2.jsonnet").read_text()
    assert "input_size: 256" in elmo_config  # ELMo's [forward; backward] representations
    assert (tmp_path / "results" / "arena_encoders" / "bert-seed2" / "metrics.json").exists()


def test_a_kept_run_says_which_cpu_it_ran_on(tmp_path, monkeypatch):
    """CPU-minutes compare only on the same kind of CPU: each kept run records its machine."""
    monkeypatch.setattr(runner, "RESULTS", tmp_path / "results")
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.json").write_text("{}")
    runner.keep("arena_encoders", "bert-seed1", run)
    machine = json.loads(
        (tmp_path / "results" / "arena_encoders" / "bert-seed1" / "machine.json").read_text()
    )
    assert machine == runner.machine() and machine["cpu"] and machine["torch"] == torch.__version__
    assert set(machine["flags"]) <= {"avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16"}


def test_an_elmo_transfer_run_fine_tunes_its_own_source_in_its_own_mode_and_keeps_its_starting_weights(
    tmp_path, monkeypatch
):
    trained, evaluated = glue_campaign_here(tmp_path, monkeypatch)
    from reproduction import lstm_weights

    measured = []

    def sizes(archive, reinitialize, seed):
        measured.append((archive, reinitialize, seed))
        return {"lstm": {"input_norm": 1.0}}

    monkeypatch.setattr(lstm_weights, "archive_lstm_weight_sizes", sizes)
    monkeypatch.setattr(runner, "resolved", lambda run: {**run, "resolved": True})
    runs = {run["name"]: run for run in campaigns.elmo_transfer_runs()}
    runner.run_campaign("elmo_transfer", [runs["sweep-lr2e-3-ft"], runs["untrained-ft"]], core=0)
    # the sweep's biLM (pre-trained first here: its archive is missing) and the arena's stateful seed-1 biLM
    assert trained == [
        "tuning/elmo_adam-lr2e-3",
        "elmo_transfer/sweep-lr2e-3-ft",
        "arena_encoders/elmo_stateful-seed1",
        "elmo_transfer/untrained-ft",
    ]
    configs = tmp_path / "runs" / "elmo_transfer" / "configs"
    assert 'encoder: "archive-ft"' in (configs / "sweep-lr2e-3-ft.jsonnet").read_text()
    untrained = (configs / "untrained-ft.jsonnet").read_text()
    assert (
        'encoder: "random-ft"' in untrained and "input_size: 256" in untrained and "sst2.jsonnet" in untrained
    )
    assert measured == [
        (tmp_path / "runs" / "tuning" / "elmo_adam-lr2e-3" / "model.tar.gz", False, 1),
        (tmp_path / "runs" / "arena_encoders" / "elmo_stateful-seed1" / "model.tar.gz", True, 1),
    ]
    kept = tmp_path / "results" / "elmo_transfer" / "untrained-ft" / "encoder_weights.json"
    assert json.loads(kept.read_text()) == {"lstm": {"input_norm": 1.0}}
    assert evaluated == [
        str(tmp_path / "runs" / "elmo_transfer" / name / "model.tar.gz")
        for name in ("sweep-lr2e-3-ft", "untrained-ft")
    ]


def test_an_architecture_is_the_arena_config_on_a_tiny_budget(tmp_path, monkeypatch):
    from allennlp.common import Params

    monkeypatch.setattr(campaigns, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(runner, "RUNS", tmp_path / "runs")
    sweep(tmp_path / "results", {**BERT_SWEEP, "elmo_zero-lr4e-3": 130.0})
    wikitext_here(tmp_path, monkeypatch)
    monkeypatch.setattr(campaigns, "tuned", lambda encoder: (0.001, "pre" if encoder == "bert" else "zero"))
    runs = {run["name"]: run for run in campaigns.arena_encoder_runs()}
    (bert,) = [run for run in campaigns.architecture_runs() if run["name"] == "bert"]
    tiny = Params.from_file(str(runner.variant("architectures", campaigns.resolved(bert)))).as_dict()
    arena = Params.from_file(
        str(runner.variant("arena_encoders", campaigns.resolved(runs["bert-seed1"])))
    ).as_dict()
    assert tiny["model"] == arena["model"] and tiny["vocabulary"] == arena["vocabulary"]
    assert tiny["train_data_path"].endswith("wikitext2-tiny-100.txt")
    assert tiny["validation_data_path"] == arena["validation_data_path"]
    # The record biLM: 8e-3 from zero states, whatever the tuning now chooses
    record = Params.from_file(
        str(runner.variant("arena_encoders", campaigns.resolved(runs["elmo_lr8e3-seed3"])))
    ).as_dict()
    assert (
        record["trainer"]["optimizer"]["lr"] == 0.008 and record["model"]["carry_states_in_training"] is False
    )
    assert record["random_seed"] == 3


def test_bert_star_is_tuned_again_on_the_budget_it_runs(tmp_path, monkeypatch):
    from allennlp.common import Params

    monkeypatch.setattr(runner, "RUNS", tmp_path / "runs")
    wikitext = wikitext_here(tmp_path, monkeypatch)
    runs = {run["name"]: run for run in campaigns.bert_budget_runs()}
    assert len(runs) == len(campaigns.BERT_BUDGET) == 11
    constant = Params.from_file(
        str(runner.variant("bert_budget", runs["pre-lr4e-3-warmup250-constant"]))
    ).as_dict()
    assert constant["trainer"]["learning_rate_scheduler"] == {
        "type": "constant_with_warmup",
        "num_warmup_steps": 250,
    }
    assert (
        constant["model"]["encoder"]["layer_norm"] == "pre"
        and constant["trainer"]["optimizer"]["lr"] == 0.004
    )
    linear = Params.from_file(
        str(runner.variant("bert_budget", runs["post-lr1e-3-warmup1000-linear"]))
    ).as_dict()
    assert linear["trainer"]["learning_rate_scheduler"] == {
        "type": "linear_with_warmup",
        "warmup_steps": 1000,
    }
    assert linear["trainer"]["num_epochs"] == 2 and linear["train_data_path"] == str(wikitext / "train.txt")
