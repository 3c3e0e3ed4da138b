"""The commands users run, as subprocesses: allennlp train / evaluate with the plugin."""

import json

import pytest

from tests import FIXTURES_ROOT, PROJECT_ROOT, run_allennlp, variant_config

run = run_allennlp


@pytest.mark.slow
def test_small_config_trains_statefully_with_sequential_accumulation_then_evaluates(tmp_path):
    corpus = str(FIXTURES_ROOT / "lm" / "corpus.txt")
    env = {
        "MAELMO_TRAIN_PATH": corpus,
        "MAELMO_VALIDATION_PATH": corpus,
        "MAELMO_VOCAB": str(FIXTURES_ROOT / "lm" / "vocab.txt"),
    }
    config = variant_config(
        tmp_path,
        PROJECT_ROOT / "training_config" / "lm" / "pretrain_small_own_data.jsonnet",
        sizes={
            "dim": 16,
            "cells": 24,
            "batch_size": 2,
            "sequence_length": 8,
            "epochs": 2,
            "num_mask_sets": 2,
        },
        settings={"mask_accumulation": "sequential"},
    )
    serialization_dir = tmp_path / "run"
    run(
        ["train", config, "-s", str(serialization_dir), "--include-package", "maelmo_plugin"],
        env,
        PROJECT_ROOT,
    )
    metrics = json.loads((serialization_dir / "metrics.json").read_text())
    assert {"training_perplexity", "validation_perplexity", "validation_accuracy"} <= metrics.keys()
    throughput = json.loads((serialization_dir / "throughput.json").read_text())
    assert [record["epoch"] for record in throughput] == [0, 1]
    assert all(record["wordpieces_per_second"] > 0 for record in throughput)
    assert throughput[1]["updates"] > throughput[0]["updates"] > 0  # optimizer steps since the start
    # 2 passes per batch: each epoch counts every laid-out word-piece twice.
    assert throughput[0]["wordpieces"] % 2 == 0

    output = tmp_path / "evaluation.json"
    run(
        [
            "evaluate",
            str(serialization_dir / "model.tar.gz"),
            corpus,
            "--output-file",
            str(output),
            "--include-package",
            "maelmo_plugin",
        ],
        env,
        PROJECT_ROOT,
    )
    evaluation = json.loads(output.read_text())
    assert evaluation["perplexity"] == pytest.approx(metrics["validation_perplexity"], rel=1e-5)


@pytest.mark.slow
def test_predict_representations_and_embed_to_hdf5(tmp_path, fill_mask_archive):
    import h5py
    import numpy

    archive = fill_mask_archive
    sentences = [
        "The cat sleeps on the house.",
        "A dog eats a fish.",
        "The unbelievable king lived in Berlin.",
    ]
    inputs = tmp_path / "sentences.jsonl"
    inputs.write_text("".join(json.dumps({"sentence": sentence}) + "\n" for sentence in sentences))
    output = tmp_path / "vectors.jsonl"
    run(
        [
            "predict",
            archive,
            str(inputs),
            "--predictor",
            "maelmo_representations",
            "--output-file",
            str(output),
            "--batch-size",
            "2",
            "--predictor-args",
            json.dumps({"layer": 2, "pool": "mean"}),
            "--silent",
            "--include-package",
            "maelmo_plugin",
        ],
        {},
        PROJECT_ROOT,
    )
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["words"] for line in lines][2] == [
        "The",
        "unbelievable",
        "king",
        "lived",
        "in",
        "Berlin",
        ".",
    ]
    assert [len(line["vectors"]) for line in lines] == [7, 6, 7] and len(lines[0]["vectors"][0]) == 16

    text = tmp_path / "sentences.txt"
    text.write_text("\n".join(sentences) + "\n")
    hdf5_file = tmp_path / "vectors.hdf5"
    result = run(
        [
            "maelmo-embed",
            archive,
            str(text),
            str(hdf5_file),
            "--batch-size",
            "2",
            "--pool",
            "mean",
            "--layer",
            "2",
            "--include-package",
            "maelmo_plugin",
        ],
        {},
        PROJECT_ROOT,
    )
    assert f"Wrote the vectors of 3 sentences to {hdf5_file}" in result.stdout
    assert "allennlp.common.params" not in result.stderr  # AllenNLP's start-up records are DEBUG ones
    with h5py.File(hdf5_file, "r") as hdf5:
        assert json.loads(hdf5["sentence_to_index"][0]) == {
            sentence: str(i) for i, sentence in enumerate(sentences)
        }
        for index, line in enumerate(lines):
            numpy.testing.assert_allclose(
                hdf5[str(index)][()], numpy.array(line["vectors"]), rtol=1e-4, atol=1e-5
            )
