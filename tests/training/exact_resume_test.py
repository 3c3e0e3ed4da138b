"""
A run killed mid-epoch (SIGKILL, no clean-up) and resumed with `allennlp train -r` ends exactly where an
uninterrupted run ends: same weights, same metrics. Real `allennlp train` subprocesses on tiny configs.
"""

import json
import shutil
from types import SimpleNamespace

import pytest
import torch
from allennlp.common import Params
from allennlp.data import DatasetReader
from allennlp.models import Model
from allennlp.models.archival import load_archive

from maelmo_plugin.common.wordpiece import WordpieceVocabulary
from maelmo_plugin.lm.data_loaders.btbptt import BtbpttDataLoader
from maelmo_plugin.training.exact_resume import ExactResumeCallback
from tests import FIXTURES_ROOT, PROJECT_ROOT, run_allennlp

CALLBACKS = [{"type": "maelmo_exact_resume"}, {"type": "maelmo_test_kill_switch"}]
# Figures that measure the machine, not the training.
NOT_REPRODUCIBLE = ("duration", "memory_MB", "training_start_epoch", "training_epochs")


@pytest.mark.parametrize("config", ["experiment.jsonnet", "lstm_experiment.jsonnet"])
def test_the_callbacks_state_loads_without_code_and_continues_a_model_exactly(tmp_path, config):
    """Masked ELMo, and AllenNLP's own `lstm` under the same model (docs/encoders.md)."""
    params = Params.from_file(
        str(FIXTURES_ROOT / "lm" / config), params_overrides={"model.encoder.dropout": 0.3}
    )
    vocab = WordpieceVocabulary.from_wordpiece_vocab(str(FIXTURES_ROOT / "lm" / "vocab.txt"))
    reader = DatasetReader.from_params(params["dataset_reader"])
    corpus = str(FIXTURES_ROOT / "lm" / "corpus.txt")
    batches = list(BtbpttDataLoader(reader, corpus, batch_size=2, sequence_length=12, quiet=True))
    model = Model.from_params(vocab=vocab, params=params["model"].duplicate(), serialization_dir=None)
    for batch in batches[:3]:  # carried states, mask generator, dropout RNG and metrics all move on
        model(**batch)["loss"].backward()
    saving = ExactResumeCallback(str(tmp_path))
    saving.on_start(SimpleNamespace(model=model))
    torch.save(saving.state_dict(), tmp_path / "state.th")
    expected = model(**batches[3])["loss"]

    resumed = Model.from_params(vocab=vocab, params=params["model"].duplicate(), serialization_dir=None)
    resumed.load_state_dict(model.state_dict())
    loading = ExactResumeCallback(str(tmp_path))
    loading.load_state_dict(torch.load(tmp_path / "state.th", weights_only=True))  # plain tensors and numbers
    loading.on_start(SimpleNamespace(model=resumed))
    assert torch.equal(resumed(**batches[3])["loss"], expected)
    assert resumed.get_metrics() == model.get_metrics()


def pretraining(serialization_dir, kill_at=None, recover=False):
    corpus = str(FIXTURES_ROOT / "lm" / "corpus.txt")
    vocab = str(FIXTURES_ROOT / "lm" / "vocab.txt")
    env = {"MAELMO_TRAIN_PATH": corpus, "MAELMO_VALIDATION_PATH": corpus, "MAELMO_VOCAB": vocab}
    overrides = {
        "model.encoder.input_dim": 16,
        "model.encoder.cells": 24,
        "model.encoder.dropout": 0.3,
        "data_loader.batch_size": 2,
        "data_loader.sequence_length": 4,
        "trainer.num_epochs": 3,
        "trainer.checkpointer.save_every_num_batches": 2,
        "trainer.callbacks": [{"type": "maelmo_throughput"}, *CALLBACKS],
    }
    return train("lm/pretrain_small_own_data.jsonnet", overrides, env, serialization_dir, kill_at, recover)


def glue_finetuning(serialization_dir, environment, kill_at=None, recover=False):
    overrides = {
        "model.encoder": {
            "type": "lstm",
            "input_size": 16,
            "hidden_size": 8,
            "num_layers": 2,
            "bidirectional": True,
        },
        "data_loader.batch_size": 4,
        "data_loader.batches_per_epoch": 3,
        "trainer.num_epochs": 3,
        "trainer.checkpointer.save_every_num_batches": 1,
        "trainer.callbacks": CALLBACKS,
    }
    return train("glue/rte.jsonnet", overrides, environment, serialization_dir, kill_at, recover)


def train(config, overrides, env, serialization_dir, kill_at, recover):
    arguments = [
        "train",
        str(PROJECT_ROOT / "training_config" / config),
        "-s",
        str(serialization_dir),
        "--include-package",
        "maelmo_plugin",
        "--include-package",
        "tests.fixtures.kill_switch",
        "-o",
        json.dumps(overrides),
    ] + (["-r"] if recover else [])
    env = {**env, "MAELMO_TEST_KILL_AT": f"{kill_at[0]},{kill_at[1]}" if kill_at else ""}
    return run_allennlp(arguments, env, check=kill_at is None)


def reproducible_metrics(serialization_dir):
    metrics = json.loads((serialization_dir / "metrics.json").read_text())
    return {
        name: value for name, value in metrics.items() if not any(part in name for part in NOT_REPRODUCIBLE)
    }


def assert_same_run(expected_dir, actual_dir):
    assert reproducible_metrics(actual_dir) == reproducible_metrics(expected_dir)
    expected, actual = (torch.load(d / "best.th") for d in (expected_dir, actual_dir))
    assert expected.keys() == actual.keys()
    for name in expected:
        assert torch.equal(expected[name], actual[name]), name


def assert_killed_then_resumed(killed, serialization_dir, resume):
    assert killed.returncode == -9  # SIGKILL: nothing was flushed or closed
    assert not (serialization_dir / "metrics.json").exists()
    resume()


@pytest.fixture(scope="module")
def uninterrupted_pretraining(tmp_path_factory):
    serialization_dir = tmp_path_factory.mktemp("uninterrupted")
    pretraining(serialization_dir)
    return serialization_dir


def test_pretraining_killed_mid_epoch_resumes_to_the_same_weights_and_metrics(
    uninterrupted_pretraining, tmp_path
):
    # Epoch 1 of 3, batch 5 of 15: the newest checkpoint is batch 4, so batch 5 is lost and redone.
    killed = pretraining(tmp_path, kill_at=(1, 5))
    assert_killed_then_resumed(killed, tmp_path, lambda: pretraining(tmp_path, recover=True))
    assert_same_run(uninterrupted_pretraining, tmp_path)
    throughput = json.loads((tmp_path / "throughput.json").read_text())
    assert [record["epoch"] for record in throughput] == [0, 1, 2]  # the epoch before the kill is kept


def test_two_runs_with_the_same_seed_are_identical(uninterrupted_pretraining, tmp_path):
    pretraining(tmp_path)
    assert_same_run(uninterrupted_pretraining, tmp_path)


@pytest.mark.slow  # pre-training's resume, below, runs in the default suite; CI runs this one
def test_glue_finetuning_killed_mid_epoch_resumes_to_the_same_weights_and_metrics(glue_environment, tmp_path):
    uninterrupted = tmp_path / "uninterrupted"
    glue_finetuning(uninterrupted, glue_environment)
    resumed = tmp_path / "resumed"
    killed = glue_finetuning(resumed, glue_environment, kill_at=(1, 2))
    assert_killed_then_resumed(
        killed, resumed, lambda: glue_finetuning(resumed, glue_environment, recover=True)
    )
    assert_same_run(uninterrupted, resumed)


@pytest.mark.parametrize("best", ["missing", "stale"])
def test_a_run_stopped_after_its_last_checkpoint_resumes_to_its_archive_and_final_metrics(
    uninterrupted_pretraining, tmp_path, best
):
    """Killed after the last epoch's checkpoint was marked, before AllenNLP had written best.th from it (missing),
    or before it had replaced the previous epoch's best.th (stale), and before metrics.json and the archive:
    `-r` has no epoch left to train. It must still archive the last epoch's weights and report its metrics,
    as the run that never stopped did. (Before, it failed on the missing best.th at every attempt, or
    archived the stale weights, and its metrics.json lost the final epoch's figures.)"""
    run = tmp_path / "run"
    shutil.copytree(uninterrupted_pretraining, run)
    metrics = json.loads((run / "metrics.json").read_text())
    assert (
        metrics["best_epoch"] == metrics["epoch"] == 2
    )  # the last epoch is the best: best.th is its weights
    for name in ("metrics.json", "model.tar.gz"):
        (run / name).unlink()
    weights = torch.load(run / "best.th")
    (run / "best.th").unlink()
    if best == "stale":  # an earlier epoch's weights, as they stand until AllenNLP replaces them
        torch.save({name: tensor + 1 for name, tensor in weights.items()}, run / "best.th")
    pretraining(run, recover=True)
    assert_same_run(uninterrupted_pretraining, run)
    archived = load_archive(str(run / "model.tar.gz")).model.state_dict()
    assert all(torch.equal(archived[name], tensor) for name, tensor in weights.items())
