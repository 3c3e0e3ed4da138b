"""
The GLUE protocol as users run it, in subprocesses: allennlp train on training_config/glue/rte.jsonnet, then
allennlp evaluate on the dev file and allennlp predict on the test file (a GLUE submission TSV), once on a
tiny Masked ELMo archive and once on a tiny ELMo-format options/hdf5 pair that the test writes.
"""

import json

import pytest

from tests import FIXTURES_ROOT, PROJECT_ROOT, variant_config
from tests import run_allennlp as run
from tests.fixtures.elmo import write_tiny_elmo

RTE = FIXTURES_ROOT / "glue" / "RTE"


def overrides(embedding_dim: int) -> dict:
    """The real config with jiant's 2 x 1024 BiLSTM and Table 1's heads shrunk, and 2 epochs of 2 batches."""
    return {
        "model.encoder": {
            "type": "lstm",
            "input_size": embedding_dim,
            "hidden_size": 8,
            "bidirectional": True,
        },
        "model.projection_dim": 8,
        "model.classifier_hidden_dim": 8,
        "data_loader.batch_size": 2,
        "data_loader.batches_per_epoch": 2,
        "trainer.num_epochs": 2,
    }


def run_protocol(encoder: str, environment: dict, embedding_dim: int, tmp_path) -> None:
    env = {"MAELMO_GLUE_DIR": str(FIXTURES_ROOT / "glue"), **environment}
    run_dir = tmp_path / "rte"
    # the encoder as users choose it: a two-line variant file of the task's config (glue.libsonnet)
    config = variant_config(
        tmp_path, PROJECT_ROOT / "training_config" / "glue" / "rte.jsonnet", settings={"encoder": encoder}
    )
    run(
        [
            "train",
            config,
            "-s",
            str(run_dir),
            "--include-package",
            "maelmo_plugin",
            "-o",
            json.dumps(overrides(embedding_dim)),
        ],
        env,
        PROJECT_ROOT,
    )
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert {"training_accuracy", "best_validation_accuracy", "best_validation_glue_score"} <= metrics.keys()
    archive = str(run_dir / "model.tar.gz")

    evaluation, predictions = tmp_path / "evaluation.json", tmp_path / "dev_predictions.jsonl"
    run(
        [
            "evaluate",
            archive,
            str(RTE / "dev.tsv"),
            "--output-file",
            str(evaluation),
            "--predictions-output-file",
            str(predictions),
            "--include-package",
            "maelmo_plugin",
        ],
        env,
        PROJECT_ROOT,
    )
    scores = json.loads(evaluation.read_text())
    assert {"accuracy", "glue_score", "loss"} <= scores.keys()
    assert scores["glue_score"] == scores["accuracy"] and scores["accuracy"] in (0.0, 0.5, 1.0)
    # One line per batch: both dev rows were evaluated.
    batches = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert sum(len(batch["probs"]) for batch in batches) == 2

    submission = tmp_path / "RTE.tsv"
    run(
        [
            "predict",
            archive,
            str(RTE / "test.tsv"),
            "--use-dataset-reader",
            "--predictor",
            "maelmo_glue",
            "--output-file",
            str(submission),
            "--silent",
            "--include-package",
            "maelmo_plugin",
        ],
        env,
        PROJECT_ROOT,
    )
    header, *rows = submission.read_text().splitlines()
    assert header == "index\tprediction"
    assert [row.split("\t")[0] for row in rows] == ["0", "1"]  # every test row, in order, with its index
    assert {row.split("\t")[1] for row in rows} <= {"entailment", "not_entailment"}


@pytest.mark.slow
def test_rte_protocol_on_a_fine_tuned_masked_elmo_archive(masked_elmo_archive, tmp_path):
    environment = {
        "MAELMO_LM_ARCHIVE": masked_elmo_archive,
        "MAELMO_VOCAB": str(FIXTURES_ROOT / "lm" / "vocab.txt"),
    }
    run_protocol("archive-ft", environment, embedding_dim=16, tmp_path=tmp_path)


@pytest.mark.slow
def test_rte_protocol_on_a_frozen_elmo_from_options_and_hdf5_weights(tmp_path):
    options, weights = write_tiny_elmo(tmp_path / "elmo")
    environment = {
        "MAELMO_ELMO_OPTIONS": options,
        "MAELMO_ELMO_WEIGHTS": weights,
    }
    run_protocol("elmo-fz", environment, embedding_dim=32, tmp_path=tmp_path)
