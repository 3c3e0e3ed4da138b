import copy
import json
import logging
import os
import time
from typing import Any, Optional

import torch
from allennlp.data import TensorDict
from allennlp.training.callbacks.callback import TrainerCallback
from allennlp.training.metrics import Metric

from maelmo_plugin.training.throughput_callback import count_wordpieces
from maelmo_plugin.training.training_batch_callback import TrainingBatchCallback

logger = logging.getLogger(__name__)


@TrainerCallback.register("maelmo_validation_curve")
class ValidationCurveCallback(TrainingBatchCallback):
    """
    The learning curve of a run against its compute: every `every_updates` optimizer steps (and at every
    epoch's end) the model is scored on the trainer's validation data, and a point is appended to
    `validation_curve.json`: the updates so far, the training word-pieces, the seconds spent training (wall
    clock and process CPU time, both without the validations) and the validation metrics. AllenNLP validates
    once per epoch only; a claim such as "reaches a perplexity in fewer GPU-days" needs the curve in between.

    The validation here is AllenNLP's own pass (the same loader, so the same windows and masks), run with
    the model in eval mode and no gradient; the model's metric accumulators are saved before and restored
    after, so the epoch's training metrics are not disturbed. Under distributed training every worker
    validates its share (the metrics are reduced across workers) and the first writes the file. A resumed
    run (`-r`) keeps the points and the clocks of the run before it.

    Registered as a `TrainerCallback` with name "maelmo_validation_curve".

    # Parameters

    serialization_dir : `str`
        Passed by AllenNLP.
    every_updates : `int`, optional (default = `100`)
        Validate every this many optimizer steps.
    """

    def __init__(self, serialization_dir: str, every_updates: int = 100) -> None:
        super().__init__(serialization_dir)
        if every_updates < 1:
            raise ValueError(
                f"maelmo_validation_curve's every_updates must be at least 1, got {every_updates}."
            )
        self._every = every_updates
        self._points: list[dict[str, Any]] = []
        self._wall = 0.0
        self._cpu = 0.0
        self._wordpieces = 0
        self._clock: Optional[tuple] = None

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        self._restart_clock()

    def on_training_batch(
        self, trainer, batch_inputs: list[TensorDict], epoch: int, is_primary: bool
    ) -> None:
        self._stop_clock()
        self._wordpieces += count_wordpieces(batch_inputs)
        updates = int(trainer._total_batches_completed)
        if updates % self._every == 0:
            self._add_point(trainer, epoch, is_primary, self._validate(trainer))
        self._restart_clock()

    def on_epoch(
        self, trainer, metrics: dict[str, Any], epoch: int, is_primary: bool = True, **kwargs
    ) -> None:
        # AllenNLP's own validation of the epoch, unless the last point was taken at the same update.
        validation = {
            k.removeprefix("validation_"): v for k, v in metrics.items() if k.startswith("validation_")
        }
        if validation and (
            not self._points or self._points[-1]["updates"] != trainer._total_batches_completed
        ):
            self._add_point(trainer, epoch, is_primary, validation)
        # AllenNLP's validation is not training time. Its epoch-end checkpoint, saved after this call, is counted:
        # callbacks have no hook at the next batch's start. That is the CPU of serialising the weights and
        # optimizer state (the disk's wait is not process time), well under 1% of an epoch.
        self._restart_clock()

    def state_dict(self) -> dict[str, Any]:
        return {"points": self._points, "wall": self._wall, "cpu": self._cpu, "wordpieces": self._wordpieces}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._points = list(state_dict.get("points", []))
        self._wall = float(state_dict.get("wall", 0.0))
        self._cpu = float(state_dict.get("cpu", 0.0))
        self._wordpieces = int(state_dict.get("wordpieces", 0))

    def _restart_clock(self) -> None:
        self._clock = (time.perf_counter(), time.process_time())

    def _stop_clock(self) -> None:
        if self._clock is not None:
            self._wall += time.perf_counter() - self._clock[0]
            self._cpu += time.process_time() - self._clock[1]
            self._clock = None

    @staticmethod
    def _validate(trainer) -> dict[str, float]:
        model = trainer.model
        # The training epoch's running metrics, put back once the validation has used the accumulators.
        saved = {
            name: copy.deepcopy(value) for name, value in vars(model).items() if isinstance(value, Metric)
        }
        model.get_metrics(reset=True)  # the validation's figures must not include the training batches'
        model.eval()
        with torch.no_grad():
            for batch in trainer._validation_data_loader:
                model(**batch)
            metrics = model.get_metrics(reset=True)
        for name, value in saved.items():
            setattr(model, name, value)
        model.train()
        return metrics

    def _add_point(self, trainer, epoch: int, is_primary: bool, metrics: dict[str, Any]) -> None:
        point = {
            "updates": int(trainer._total_batches_completed),
            "epoch": epoch,
            "wordpieces": self._wordpieces,
            "training_seconds": round(self._wall, 3),
            "cpu_seconds": round(self._cpu, 3),
            **{name: float(value) for name, value in metrics.items() if isinstance(value, (int, float))},
        }
        self._points.append(point)
        logger.info("Validation curve: %s", point)
        if is_primary:
            with open(os.path.join(self.serialization_dir, "validation_curve.json"), "w") as out:
                json.dump(self._points, out, indent=1)
