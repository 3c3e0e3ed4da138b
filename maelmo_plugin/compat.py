"""
Compatibility shims that let AllenNLP 2.10.1 (written for torch<1.13) run on torch 2.x.

Every shim is idempotent, is applied once by `apply_all()` when `maelmo_plugin` is imported, and has a
test in `tests/compat_test.py` that fails without it. Keep this module the only place for such patches.
"""
import numpy as np
import torch


def allow_numpy_scalars_in_checkpoints() -> None:
    """
    torch>=2.6 loads `training_state_*.th` with `weights_only=True`, which rejects the numpy scalars that
    some AllenNLP metrics (e.g. `SpearmanCorrelation`) put into the metric tracker, so `allennlp train -r`
    fails with "Unsupported global: numpy._core.multiarray.scalar". Allow-listing numpy's scalar types keeps
    the safe loader (no arbitrary code) and makes those checkpoints loadable.
    """
    core = getattr(np, "_core", None) or np.core
    torch.serialization.add_safe_globals(
        [
            core.multiarray.scalar,
            np.dtype,
            np.dtypes.Float64DType,
            np.dtypes.Float32DType,
            np.dtypes.Int64DType,
            np.dtypes.Int32DType,
        ]
    )


def patch_reduce_on_plateau() -> None:
    """
    torch 2.x removed `ReduceLROnPlateau(verbose=...)`, which AllenNLP's `reduce_on_plateau` scheduler
    always passes. Re-define the wrapper's constructor without forwarding `verbose` (kept in the signature
    so existing configs still parse).
    """
    from typing import List, Union

    from allennlp.training.learning_rate_schedulers import pytorch_lr_schedulers
    from allennlp.training.learning_rate_schedulers.learning_rate_scheduler import (
        _PyTorchLearningRateSchedulerWithMetricsWrapper,
    )
    from allennlp.training.optimizers import Optimizer

    scheduler_class = pytorch_lr_schedulers.ReduceOnPlateauLearningRateScheduler
    if getattr(scheduler_class.__init__, "_maelmo_patched", False):
        return

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        verbose: bool = False,
        threshold_mode: str = "rel",
        threshold: float = 1e-4,
        cooldown: int = 0,
        min_lr: Union[float, List[float]] = 0,
        eps: float = 1e-8,
    ) -> None:
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer=optimizer,
            mode=mode,
            factor=factor,
            patience=patience,
            threshold_mode=threshold_mode,
            threshold=threshold,
            cooldown=cooldown,
            min_lr=min_lr,
            eps=eps,
        )
        _PyTorchLearningRateSchedulerWithMetricsWrapper.__init__(self, scheduler)

    __init__._maelmo_patched = True  # type: ignore[attr-defined]
    scheduler_class.__init__ = __init__  # FromParams reads the annotations above


def apply_all() -> None:
    allow_numpy_scalars_in_checkpoints()
    patch_reduce_on_plateau()
