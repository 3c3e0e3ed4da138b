"""
The base of the callbacks that act after each training batch and ignore the validation batches (the throughput,
validation-curve and weight-snapshot callbacks): AllenNLP's `on_batch` takes ten arguments, of which they use
four.
"""

import abc
from typing import Any, Optional

from allennlp.data import TensorDict
from allennlp.training.callbacks.callback import TrainerCallback


class TrainingBatchCallback(TrainerCallback, abc.ABC):
    """
    A `TrainerCallback` whose `on_batch` calls `on_training_batch` after each training batch (one optimizer
    step: `batch_inputs` holds its gradient-accumulation batches) and does nothing after a validation batch.
    Not registered: a subclass is, under its own name.
    """

    def on_batch(
        self,
        trainer,
        batch_inputs: list[TensorDict],
        batch_outputs: list[dict[str, Any]],
        batch_metrics: dict[str, Any],
        epoch: int,
        batch_number: int,
        is_training: bool,
        is_primary: bool = True,
        batch_grad_norm: Optional[float] = None,
        **kwargs,
    ) -> None:
        if is_training:
            self.on_training_batch(trainer, batch_inputs, epoch, is_primary)

    @abc.abstractmethod
    def on_training_batch(
        self, trainer, batch_inputs: list[TensorDict], epoch: int, is_primary: bool
    ) -> None:
        """
        After each training batch. `trainer._total_batches_completed` counts the optimizer steps so far, this
        one included; `is_primary` is False on every distributed worker but the first.
        """
