"""reproduction/fine_tuning.py and runner.py: each GLUE run fine-tunes (or freezes) the archive it names, pre-training it first."""

import json

from reproduction import arena, fine_tuning, runner
from tests.reproduction.runner_test import glue_campaign_here, run_glue_campaign


def test_an_arena_glue_run_fine_tunes_the_encoder_of_its_own_seed_pretraining_it_first(tmp_path, monkeypatch):
    trained, _ = glue_campaign_here(tmp_path, monkeypatch)
    monkeypatch.setattr(arena, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(runner, "resolved", lambda run: {**run, "resolved": True})
    run_glue_campaign("arena_glue", task="cola", seed=2)
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
        "arena_encoders/bert_tuning_recipe-seed2",  # the record of BERT* at the tuning campaign's recipe
        "arena_glue/bert_tuning_recipe-cola-seed2",
        "architectures/bert_tuning_recipe",  # the record's own architecture: post-LN
        "arena_glue/random_bert_tuning_recipe-cola-seed2",
        # the gate: each encoder's architecture untrained, from an archive that took one tiny epoch
        "architectures/elmo",
        "arena_glue/random_elmo-cola-seed2",
        "architectures/bert",
        "arena_glue/random_bert-cola-seed2",
        # the paper's protocol: each encoder frozen, the untrained ones too
        "arena_glue/masked_elmo-fz-cola-seed2",
        "arena_glue/elmo-fz-cola-seed2",
        "arena_glue/bert-fz-cola-seed2",
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
    runs = {run["name"]: run for run in fine_tuning.elmo_transfer_runs()}
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


def test_the_arena_leaves_masked_elmo_frozen_at_seed_1_to_the_probe():
    # The probe's final weights are the arena's masked_elmo-seed1 encoder: at GLUE seed 1 its frozen runs are the
    # arena's, on the probe's tasks; WNLI, which the probe does not run, and seeds 2 and 3 the arena runs itself.
    names = {run["name"] for run in fine_tuning.glue_runs("arena_glue")}
    assert not {f"masked_elmo-fz-{task}-seed1" for task in ("rte", "cola", "sst2")} & names
    assert {"masked_elmo-fz-wnli-seed1", "masked_elmo-fz-cola-seed2", "elmo-fz-cola-seed1"} <= names


def test_the_records_are_fine_tuned_at_their_seeds_and_berts_record_frozen_at_seed_1_where_it_was():
    runs = {run["name"]: run for run in fine_tuning.glue_runs("arena_glue")}
    for seed in (1, 2, 3):
        assert runs[f"bert_tuning_recipe-sst2-seed{seed}"]["mode"] == "archive-ft"
        assert runs[f"elmo_lr8e3-sst2-seed{seed}"]["mode"] == "archive-ft"
    assert runs["bert_tuning_recipe-fz-sst2-seed1"]["mode"] == "archive-fz"
    assert "bert_tuning_recipe-fz-sst2-seed2" not in runs
    assert fine_tuning.encoder_source("arena_glue", runs["bert_tuning_recipe-fz-rte-seed1"]) == (
        "arena_encoders",
        "bert_tuning_recipe-seed1",
    )
