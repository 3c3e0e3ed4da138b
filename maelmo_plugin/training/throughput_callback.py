import json
import logging
import os
import time
from typing import Any, cast

from allennlp.data import TensorDict, TextFieldTensors
from allennlp.nn import util
from allennlp.training.callbacks.callback import TrainerCallback

from maelmo_plugin.training.training_batch_callback import TrainingBatchCallback

logger = logging.getLogger(__name__)


@TrainerCallback.register("maelmo_throughput")
class ThroughputCallback(TrainingBatchCallback):
    """
    Measures training throughput: word-pieces (padding excluded) of the training batches per second of
    wall time from the epoch's start to its last training batch, which includes data loading but not
    validation. Logs it at every epoch's end and appends it to `throughput.json` in the serialization
    directory, so that every run reports its own speed next to its metrics, with `updates`: the optimizer
    steps taken since the run began (the model card of `allennlp maelmo-export` reports them).

    A word-piece counts once per pass of a batch: with sequential mask accumulation (the same batch
    k times) a window counts k times, as it is computed k times.

    Registered as a `TrainerCallback` with name "maelmo_throughput".

    # Parameters

    serialization_dir : `str`
        Passed by AllenNLP.
    """

    def __init__(self, serialization_dir: str) -> None:
        super().__init__(serialization_dir)
        self._epoch_start = 0.0
        self._last_batch_end = 0.0
        self._wordpieces = 0
        self._history: list[dict[str, Any]] = []

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        self._start_epoch()

    def on_training_batch(
        self, trainer, batch_inputs: list[TensorDict], epoch: int, is_primary: bool
    ) -> None:
        self._wordpieces += count_wordpieces(batch_inputs)
        self._last_batch_end = time.perf_counter()

    def on_epoch(
        self, trainer, metrics: dict[str, Any], epoch: int, is_primary: bool = True, **kwargs
    ) -> None:
        seconds = max(self._last_batch_end - self._epoch_start, 1e-9)
        record = {
            "epoch": epoch,
            "wordpieces": self._wordpieces,
            "seconds": round(seconds, 3),
            "wordpieces_per_second": round(self._wordpieces / seconds, 1),
            # Optimizer steps since the run began (AllenNLP counts one per gradient-accumulation group).
            "updates": int(getattr(trainer, "_total_batches_completed", 0)),
        }
        logger.info(
            "Training throughput, epoch %d: %.0f word-pieces/s", epoch, record["wordpieces_per_second"]
        )
        self._history.append(record)
        if is_primary:
            with open(os.path.join(self.serialization_dir, "throughput.json"), "w") as out:
                json.dump(self._history, out, indent=2)
        self._start_epoch()

    def state_dict(self) -> dict[str, Any]:
        # A resumed run keeps the epochs measured before the restart in throughput.json.
        return {"history": self._history}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._history = list(state_dict.get("history", []))

    def _start_epoch(self) -> None:
        self._epoch_start = self._last_batch_end = time.perf_counter()
        self._wordpieces = 0


def count_wordpieces(batch_inputs: list[TensorDict]) -> int:
    """The word-pieces (unpadded tokens) of one update's batches, each with a text field `tokens`."""
    # AllenNLP's TensorDict types a field as a tensor or a dict of tensors: a text field is a dict of dicts.
    return sum(
        int(util.get_text_field_mask(cast(TextFieldTensors, batch["tokens"])).sum()) for batch in batch_inputs
    )
