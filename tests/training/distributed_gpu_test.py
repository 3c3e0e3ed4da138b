"""
The GPU side of tests/training/distributed_test.py: NCCL workers, cuDNN's LSTM with packed sequences, and
AMP. Marked `gpu` (`pytest -m gpu` where a CUDA device is present); skipped without enough devices.
"""

import json

import pytest
import torch

from tests.training.distributed_test import B, config, free_port, largest_difference, train

# cuDNN's kernels and NCCL's all-reduce sum in their own order: a looser bound than gloo's on CPUs, still
# far below what a different mask or a missed update moves (about 1e-2).
GPU_TOLERANCE = 1e-4


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA devices")
def test_two_nccl_workers_train_as_one_gpu_worker(tmp_path):
    config_file = config(tmp_path, cuda_device=0, deterministic=True)
    fp32 = {"trainer.use_amp": False}  # the comparison is about the workers, not AMP's rounding
    one, _ = train(tmp_path / "one", config_file, {**fp32, "data_loader.batch_size": 2 * B})
    distributed = {"cuda_devices": [0, 1], "primary_port": free_port()}
    two, _ = train(
        tmp_path / "two", config_file, {**fp32, "data_loader.batch_size": B, "distributed": distributed}
    )
    assert largest_difference(one, two) < GPU_TOLERANCE


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_amp_pretraining_on_a_gpu_lowers_the_masked_perplexity(tmp_path):
    """cuDNN's LSTM on packed sequences, under AMP's autocast and loss scaling, with carried states."""
    run = tmp_path / "run"
    train(run, config(tmp_path, cuda_device=0), {"data_loader.batch_size": 2 * B, "trainer.num_epochs": 3})
    assert json.loads((run / "config.json").read_text())["trainer"]["use_amp"] is True  # AMP follows the GPU
    epochs = [json.loads((run / f"metrics_epoch_{epoch}.json").read_text()) for epoch in range(3)]
    assert epochs[2]["training_perplexity"] < epochs[0]["training_perplexity"]
