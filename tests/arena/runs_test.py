"""maelmo_plugin/arena/runs.py: an arena's runs and the configs they train, from its plan alone."""

from dataclasses import replace

import pytest
from allennlp.common import Params

from maelmo_plugin.arena import runs
from maelmo_plugin.arena.plan import Tuning, read_plan
from tests import PROJECT_ROOT

FIXTURES = PROJECT_ROOT / "tests" / "fixtures"


@pytest.fixture
def plan(monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    return read_plan(str(FIXTURES / "arena" / "tiny_glue.jsonnet"))


def test_the_sweep_runs_every_rate_at_the_first_seed_and_the_seeds_reuse_it(plan):
    sweep = runs.sweep(plan)
    assert [run.name for run in sweep] == [
        "lstm-lr0.003-seed1",
        "lstm-lr0.01-seed1",
        "masked_elmo-lr0.01-seed1",
    ]
    seeded = runs.seeded(plan, {"lstm": 0.01, "masked_elmo": 0.01})
    assert [run.name for run in seeded] == [
        "lstm-lr0.01-seed1",
        "masked_elmo-lr0.01-seed1",
        "lstm-lr0.01-seed2",
        "masked_elmo-lr0.01-seed2",
    ]
    assert set(seeded) & set(sweep) == {seeded[0], seeded[1]}  # the first seed's runs are the sweep's


def test_with_a_tuning_budget_the_sweep_is_its_own_runs_and_every_seed_is_trained(plan, tmp_path):
    tuned = replace(
        plan, tuning=Tuning(str(FIXTURES / "lm" / "repetitive.txt"), plan.corpus["validation"], 2)
    )
    sweep = runs.sweep(tuned)
    assert [run.name for run in sweep] == [
        "lstm-lr0.003-seed1-tuning",
        "lstm-lr0.01-seed1-tuning",
        "masked_elmo-lr0.01-seed1-tuning",
    ]
    assert not set(sweep) & set(runs.seeded(tuned, {"lstm": 0.01, "masked_elmo": 0.01}))
    path = tmp_path / "run.jsonnet"
    path.write_text(runs.pretraining_config(tuned, sweep[0], -1))
    config = Params.from_file(str(path)).as_dict(quiet=True)
    assert config["train_data_path"] == str(FIXTURES / "lm" / "repetitive.txt")
    assert config["validation_data_path"] == str(FIXTURES / "lm" / "corpus.txt")
    assert config["trainer"]["num_epochs"] == 2 and config["trainer"]["optimizer"]["lr"] == 0.003


def test_each_seed_is_fine_tuned_and_frozen_beside_its_untrained_architecture(plan):
    tunings = runs.fine_tunings(plan, {"lstm": 0.003, "masked_elmo": 0.01})
    assert len(tunings) == 2 * 2 * 2 * 2  # seeds x modes x arms x (pre-trained, untrained); one task
    names = {run.name for run in tunings}
    assert {
        "lstm-lr0.003-rte-ft-seed1",
        "untrained_lstm-rte-ft-seed1",
        "masked_elmo-lr0.01-rte-fz-seed2",
    } <= names
    untrained = next(run for run in tunings if run.untrained and run.mode == "fz")
    assert untrained.setting == "random-fz"


def test_a_pretraining_config_is_the_arms_config_with_the_arenas_corpus_seed_rate_and_encoder(plan, tmp_path):
    path = tmp_path / "run.jsonnet"
    path.write_text(runs.pretraining_config(plan, runs.Pretraining("lstm", 0.003, 2), -1))
    config = Params.from_file(str(path)).as_dict(quiet=True)
    assert config["train_data_path"] == str(FIXTURES / "lm" / "corpus.txt")
    assert config["vocabulary"]["vocab"] == str(FIXTURES / "lm" / "vocab.txt")
    assert config["trainer"]["optimizer"]["lr"] == 0.003 and config["trainer"]["num_epochs"] == 1
    assert config["model"]["encoder"] == plan.arm("lstm").encoder
    assert config["random_seed"] == 2


def test_a_glue_config_reads_the_pre_trained_archive_or_its_architecture_drawn_afresh(
    plan, tmp_path, monkeypatch
):
    for name, value in runs.glue_environment(plan, tmp_path / "model.tar.gz").items():
        monkeypatch.setenv(name, value)
    path = tmp_path / "glue.jsonnet"
    path.write_text(
        runs.glue_config(plan, runs.FineTuning("lstm", 0.003, 2, "rte", "ft", untrained=True), -1)
    )
    config = Params.from_file(str(path)).as_dict(quiet=True)
    embedder = config["model"]["text_field_embedder"]["token_embedders"]["tokens"]
    assert embedder["archive_file"] == str(tmp_path / "model.tar.gz")
    assert embedder["reinitialize"] is True and embedder["requires_grad"] is True
    assert config["model"]["encoder_hidden_dim"] == 8 and config["trainer"]["num_epochs"] == 1
    assert config["random_seed"] == 2
    assert config["train_data_path"] == str(FIXTURES / "glue" / "RTE" / "train.tsv")
