"""
The GPU side of tests/lm/training/distributed_test.py: NCCL workers, cuDNN's LSTM with packed sequences, and
AMP. Marked `gpu` (`pytest -m gpu` where a CUDA device is present); skipped without enough devices.
"""
import json

import pytest
import torch

from tests.lm.training.distributed_test import B, free_port, largest_difference, train

# cuDNN's kernels and NCCL's all-reduce sum in their own order: a looser bound than gloo's on CPUs, still
# far below what a different mask or a missed update moves (about 1e-2).
GPU_TOLERANCE = 1e-4


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA devices")
def test_two_nccl_workers_train_as_one_gpu_worker(tmp_path):
    env = {"MAELMO_CUDA_DEVICE": "0", "MAELMO_USE_AMP": "0", "MAELMO_DETERMINISTIC": "1"}
    one = train(tmp_path / "one", env, {"data_loader.batch_size": 2 * B})
    distributed = {"cuda_devices": [0, 1], "primary_port": free_port()}
    two = train(tmp_path / "two", env, {"data_loader.batch_size": B, "distributed": distributed})
    assert largest_difference(one, two) < GPU_TOLERANCE


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_amp_pretraining_on_a_gpu_lowers_the_masked_perplexity(tmp_path):
    """cuDNN's LSTM on packed sequences, under AMP's autocast and loss scaling, with carried states."""
    env = {"MAELMO_CUDA_DEVICE": "0", "MAELMO_USE_AMP": "1"}
    train(tmp_path, env, {"data_loader.batch_size": 2 * B, "trainer.num_epochs": 3})
    assert json.loads((tmp_path / "config.json").read_text())["trainer"]["use_amp"] is True
    epochs = [json.loads((tmp_path / f"metrics_epoch_{epoch}.json").read_text()) for epoch in range(3)]
    assert epochs[2]["training_perplexity"] < epochs[0]["training_perplexity"]
