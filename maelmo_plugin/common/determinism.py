"""
`MAELMO_DETERMINISTIC=1`: bit-identical runs on a GPU too, at some cost in speed.

On CPU, two runs with the same config and seeds are identical already (the tests check it, resumed runs
included). On a GPU, cuDNN picks algorithms by benchmarking and some CUDA kernels accumulate with atomic
adds in a varying order (for example the embedding's backward pass, a scatter-add over word-piece ids),
so results differ in the last bits from run to run and drift apart over a long run. This switch, read when
the plugin is imported (before AllenNLP builds anything), asks torch for deterministic kernels everywhere
and fails loudly on any operation that has none.
"""
import os

import torch


def apply() -> None:
    if os.environ.get("MAELMO_DETERMINISTIC", "0") != "1":
        return
    # cuBLAS needs a fixed workspace to be deterministic (CUDA >= 10.2); it must be set before its first use.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
