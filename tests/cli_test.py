"""The commands users run, as subprocesses: allennlp train / evaluate with the plugin."""
import json
import os
import subprocess
import sys

import pytest

from tests import FIXTURES_ROOT, PROJECT_ROOT

ALLENNLP = [sys.executable, "-m", "allennlp"]


def run(arguments, env_overrides, cwd):
    env = {**os.environ, **env_overrides, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    result = subprocess.run(ALLENNLP + arguments, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.mark.slow
def test_small_config_trains_statefully_with_sequential_accumulation_then_evaluates(tmp_path):
    corpus = str(FIXTURES_ROOT / "lm" / "corpus.txt")
    env = {
        "MAELMO_TRAIN_PATH": corpus,
        "MAELMO_VALIDATION_PATH": corpus,
        "MAELMO_VOCAB": str(FIXTURES_ROOT / "lm" / "vocab.txt"),
        "MAELMO_MASK_ACCUMULATION": "sequential",
        "MAELMO_MASK_SETS": "2",
    }
    overrides = {
        "model.encoder.input_dim": 16,
        "model.encoder.cells": 24,
        "data_loader.batch_size": 2,
        "dataset_reader.sequence_length": 8,
        "trainer.num_epochs": 2,
    }
    serialization_dir = tmp_path / "run"
    config = str(PROJECT_ROOT / "training_config" / "pretrain_small.jsonnet")
    run(["train", config, "-s", str(serialization_dir), "--include-package", "maelmo_plugin",
         "-o", json.dumps(overrides)], env, PROJECT_ROOT)
    metrics = json.loads((serialization_dir / "metrics.json").read_text())
    assert {"training_perplexity", "validation_perplexity", "validation_accuracy"} <= metrics.keys()
    throughput = json.loads((serialization_dir / "throughput.json").read_text())
    assert [record["epoch"] for record in throughput] == [0, 1]
    assert all(record["wordpieces_per_second"] > 0 for record in throughput)
    # 2 passes per batch: each epoch counts every laid-out word-piece twice.
    assert throughput[0]["wordpieces"] % 2 == 0

    output = tmp_path / "evaluation.json"
    run(["evaluate", str(serialization_dir / "model.tar.gz"), corpus, "--output-file", str(output),
         "--include-package", "maelmo_plugin"], env, PROJECT_ROOT)
    evaluation = json.loads(output.read_text())
    assert evaluation["perplexity"] == pytest.approx(metrics["validation_perplexity"], rel=1e-5)
