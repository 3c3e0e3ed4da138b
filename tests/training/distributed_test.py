"""
The number of workers does not change what pre-training computes: `allennlp train` with 1 worker of batch
2B and with 2 gloo workers of batch B (on one machine, or as two "nodes" on localhost) end with the same
weights and validation perplexity, for k = 1 and k = 4 mask accumulation, batched and sequential. Dropout
is 0: the model's dropout masks come from torch's generator, which is the same on every worker.

Every test here is slow (2 or 3 `allennlp train` launches each) and runs in CI (`.ci/run`). In the default
suite, a gloo pair runs the trainer's loop in tests/training/ddp_accelerator_test.py.
"""

import json
import socket
import subprocess
import sys

import pytest
import torch

from tests import FIXTURES_ROOT, PROJECT_ROOT, run_allennlp, variant_config

BASE = PROJECT_ROOT / "training_config" / "lm" / "pretrain_small_own_data.jsonnet"
ENV = {
    "MAELMO_TRAIN_PATH": str(FIXTURES_ROOT / "lm" / "repetitive.txt"),
    "MAELMO_VALIDATION_PATH": str(FIXTURES_ROOT / "lm" / "corpus.txt"),
    "MAELMO_VOCAB": str(FIXTURES_ROOT / "lm" / "vocab.txt"),
    "OMP_NUM_THREADS": "1",  # two workers on the CI's two cores
}
SIZES = {"dim": 16, "cells": 24, "dropout": 0.0, "sequence_length": 8, "epochs": 1}
SMALL = {"trainer.callbacks": [{"type": "maelmo_exact_resume"}]}
B = 2
# The weights move by about lr x updates (1e-3 x ~60) when anything differs; summation order alone moves
# them by about 1e-6.
TOLERANCE = 1e-5
# A desynchronised collective hangs rather than fails: stop such a run long before CI's limit.
TIMEOUT = 300


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def config(directory, k=1, mode="batched", **settings) -> str:
    """pretrain_small_own_data.jsonnet at the sizes above, with k mask sets accumulated `mode`."""
    # checkpoint_seconds 1: time-based checkpoints, agreed between the workers.
    settings = {"checkpoint_seconds": 1, "mask_accumulation": mode, **settings}
    return variant_config(directory, BASE, sizes={**SIZES, "num_mask_sets": k}, settings=settings)


def train(serialization_dir, config_file, overrides, extra=()):
    """The run's weights and its metrics."""
    arguments = [
        "train",
        config_file,
        "-s",
        str(serialization_dir),
        "--include-package",
        "maelmo_plugin",
        "-o",
        json.dumps({**SMALL, **overrides}),
        *extra,
    ]
    run_allennlp(arguments, ENV, timeout=TIMEOUT)
    metrics = json.loads((serialization_dir / "metrics.json").read_text())
    return torch.load(serialization_dir / "best.th", weights_only=True), metrics


def largest_difference(first, second):
    assert first.keys() == second.keys()
    return max((first[name] - second[name]).abs().max().item() for name in first)


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory):
    """1 worker of batch 2B, for each (k, mode), trained on first use."""
    runs = {}

    def weights(k, mode):
        if (k, mode) not in runs:
            directory = tmp_path_factory.mktemp(f"one-{k}-{mode}")
            runs[k, mode] = train(
                directory / "run", config(directory, k, mode), {"data_loader.batch_size": 2 * B}
            )
        return runs[k, mode]

    return weights


@pytest.mark.parametrize(
    "k, mode",
    [
        pytest.param(1, "batched", marks=pytest.mark.slow),
        pytest.param(4, "batched", marks=pytest.mark.slow),
        pytest.param(4, "sequential", marks=pytest.mark.slow),
    ],
)
def test_two_workers_of_b_rows_train_as_one_worker_of_2b(k, mode, one_worker, tmp_path):
    distributed = {"cuda_devices": [-1, -1], "primary_port": free_port()}
    if mode == "sequential":  # one gradient all-reduce per update (tests/training/ddp_accelerator_test.py)
        distributed["ddp_accelerator"] = {"type": "maelmo_ddp"}
    overrides = {"data_loader.batch_size": B, "distributed": distributed}
    two, two_metrics = train(tmp_path / "run", config(tmp_path, k, mode), overrides)
    one, one_metrics = one_worker(k, mode)
    difference = largest_difference(one, two)
    print(f"k={k} {mode}: largest weight difference 1 vs 2 workers {difference:.2e}")
    assert difference < TOLERANCE
    # Validation's windows (16, in batches of 32: the second worker reads only a [PAD] filler row) are
    # shared between the workers and their sums reduced: the same per-token perplexity as one worker's.
    perplexities = [metrics["validation_perplexity"] for metrics in (one_metrics, two_metrics)]
    assert perplexities[1] == pytest.approx(perplexities[0], rel=1e-5)
    assert list(
        (tmp_path / "run").glob("checkpoint_e*_b*.done")
    )  # the agreed time-based checkpoints were written


@pytest.mark.slow
def test_two_nodes_on_localhost_train_as_one_worker(one_worker, tmp_path):
    """AllenNLP's num_nodes / primary_address / primary_port / --node-rank: one worker per "node"."""
    distributed = {
        "cuda_devices": [-1],
        "num_nodes": 2,
        "primary_address": "127.0.0.1",
        "primary_port": free_port(),
    }
    overrides = json.dumps({**SMALL, "data_loader.batch_size": B, "distributed": distributed})
    env = {**ENV, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    config_file = config(tmp_path)
    nodes = []
    for node in range(2):
        command = [
            sys.executable,
            "-m",
            "allennlp",
            "train",
            config_file,
            "-s",
            str(tmp_path / f"node{node}"),
            "--include-package",
            "maelmo_plugin",
            "-o",
            overrides,
            "--node-rank",
            str(node),
        ]
        nodes.append(
            subprocess.Popen(
                command,
                cwd=PROJECT_ROOT,
                env={**__import__("os").environ, **env},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for node in nodes:
        _, errors = node.communicate(timeout=TIMEOUT)
        assert node.returncode == 0, errors[-3000:]
    two = torch.load(tmp_path / "node0" / "best.th", weights_only=True)
    assert largest_difference(one_worker(1, "batched")[0], two) < TOLERANCE


@pytest.mark.slow
def test_two_workers_killed_mid_epoch_resume_to_the_weights_of_an_uninterrupted_run(tmp_path):
    """Each worker's carried LSTM states are saved and restored, not the first worker's for both."""
    config_file = config(tmp_path)
    overrides = {
        "data_loader.batch_size": B,
        "trainer.num_epochs": 2,
        "trainer.checkpointer.save_every_num_batches": 4,
        "trainer.callbacks": [{"type": "maelmo_exact_resume"}, {"type": "maelmo_test_kill_switch"}],
    }

    ports = {}  # -r refuses a "distributed" block other than the checkpoint's: one port per run directory

    def run(directory, kill_at="", recover=False):
        distributed = {"cuda_devices": [-1, -1], "primary_port": ports.setdefault(directory, free_port())}
        arguments = [
            "train",
            config_file,
            "-s",
            str(directory),
            "--include-package",
            "maelmo_plugin",
            "--include-package",
            "tests.fixtures.kill_switch",
            "-o",
            json.dumps({**SMALL, **overrides, "distributed": distributed}),
        ]
        env = {**ENV, "MAELMO_TEST_KILL_AT": kill_at}
        resume = ["-r"] if recover else []
        return run_allennlp(arguments + resume, env, check=not kill_at, timeout=TIMEOUT)

    run(tmp_path / "uninterrupted")
    killed = run(tmp_path / "resumed", kill_at="1,6")  # epoch 1, batch 6: the checkpoint of batch 4 is newest
    assert killed.returncode != 0 and not (tmp_path / "resumed" / "metrics.json").exists()
    run(tmp_path / "resumed", recover=True)
    expected, actual = (
        torch.load(tmp_path / name / "best.th", weights_only=True) for name in ("uninterrupted", "resumed")
    )
    assert largest_difference(expected, actual) == 0.0
