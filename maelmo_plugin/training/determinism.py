"""
`settings.deterministic` in a config: bit-identical runs on a GPU too, at some cost in speed.

On CPU, two runs with the same config and seed are identical already (the tests check it, resumed runs
included). On a GPU, cuDNN picks algorithms by benchmarking and some CUDA kernels accumulate with atomic
adds in a varying order (for example the embedding's backward pass, a scatter-add over word-piece ids), so
results differ in the last bits from run to run and drift apart over a long run. This callback asks torch
for deterministic kernels everywhere, and fails loudly on any operation that has none.
"""

import os

import torch
from allennlp.training.callbacks.callback import TrainerCallback


@TrainerCallback.register("maelmo_deterministic")
class DeterministicCallback(TrainerCallback):
    """
    Switches torch to deterministic kernels for the run. It acts when it is built, with the trainer: after
    the model is built and moved to its device, before any GPU kernel runs (cuBLAS reads its workspace
    setting when it first starts, at the first matrix product). In a distributed run each worker builds
    its own.

    Registered as a `TrainerCallback` with name "maelmo_deterministic".

    # Parameters

    serialization_dir : `str`
        Passed by the trainer.
    """

    def __init__(self, serialization_dir: str) -> None:
        super().__init__(serialization_dir)
        # cuBLAS needs a fixed workspace to be deterministic (CUDA >= 10.2).
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
