"""
Does a long pre-training run's memory stay flat?

Runs `allennlp train training_config/lm/pretrain_small.jsonnet` as a user does, with a tiny model and small
windows so that it makes thousands of updates in a few minutes, and samples the process's resident memory
(VmRSS) every time an epoch ends (AllenNLP writes metrics_epoch_N.json). Prints RSS per epoch and the
growth from the end of the first epoch (allocator, caches and the tokenized corpus are in place by then)
to the end of the last, per 1,000 updates. A leak (a tensor kept per batch, a growing history) shows as
steady growth; a bounded run levels off.

    OMP_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/memory_growth.py [--epochs 6] [--corpus PATH]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Tiny sizes: the point is many updates, so the per-update bookkeeping (states carried, metrics, loader,
# callbacks, checkpoints) dominates.
OVERRIDES = {
    "model.encoder.input_dim": 32,
    "model.encoder.cells": 64,
    "data_loader.sequence_length": 16,
    "data_loader.batch_size": 4,
    "trainer.checkpointer.save_every_num_batches": 500,
}


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_argument("--epochs", type=int, default=6)
    arguments.add_argument("--corpus", help="training corpus (default: the sample corpus)")
    args = arguments.parse_args()
    with tempfile.TemporaryDirectory() as serialization_dir:
        overrides = {**OVERRIDES, "trainer.num_epochs": args.epochs}
        # On another corpus: the small config's own-data variant, with the sample's validation file and vocabulary.
        config = "pretrain_small_own_data.jsonnet" if args.corpus else "pretrain_small.jsonnet"
        command = [
            sys.executable,
            "-m",
            "allennlp",
            "train",
            f"training_config/lm/{config}",
            "-s",
            serialization_dir,
            "-f",
            "--include-package",
            "maelmo_plugin",
            "-o",
            json.dumps(overrides),
        ]
        sample = os.path.join(REPOSITORY, "training_config", "lm", "sample")
        own_data = {
            "MAELMO_TRAIN_PATH": args.corpus,
            "MAELMO_VALIDATION_PATH": os.path.join(sample, "valid.txt"),
            "MAELMO_VOCAB": os.path.join(sample, "vocab.txt"),
        }
        env = {**os.environ, **(own_data if args.corpus else {})}
        process = subprocess.Popen(
            command, cwd=REPOSITORY, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        samples = watch_epochs(process, serialization_dir, args.epochs)
        if process.wait() != 0:
            sys.exit(
                f"allennlp train failed (exit {process.returncode}); run it by hand to see why: {' '.join(command)}"
            )
        throughput = json.load(open(os.path.join(serialization_dir, "throughput.json")))
    window_tokens = OVERRIDES["data_loader.batch_size"] * OVERRIDES["data_loader.sequence_length"]
    updates_per_epoch = throughput[0]["wordpieces"] // window_tokens
    report(samples, updates_per_epoch)


def watch_epochs(process: subprocess.Popen, serialization_dir: str, epochs: int) -> list:
    """RSS (MB) when each epoch's metrics file appears, i.e. right after its validation."""
    samples = []
    while len(samples) < epochs and process.poll() is None:
        if os.path.exists(os.path.join(serialization_dir, f"metrics_epoch_{len(samples)}.json")):
            samples.append(rss_mb(process.pid))
        time.sleep(0.05)
    return samples


def report(samples: list, updates_per_epoch: int) -> None:
    print("| epoch | updates so far | RSS (MB) |\n|---|---|---|")
    for epoch, rss in enumerate(samples):
        print(f"| {epoch} | {(epoch + 1) * updates_per_epoch:,} | {rss:,.1f} |")
    if len(samples) > 1:
        updates = (len(samples) - 1) * updates_per_epoch
        growth = samples[-1] - samples[0]
        print(
            f"\nGrowth after the first epoch: {growth:+.1f} MB over {updates:,} updates "
            f"({1000 * growth / updates:+.2f} MB per 1,000 updates)."
        )


if __name__ == "__main__":
    main()
