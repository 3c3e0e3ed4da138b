"""
What a checkpoint must hold, beyond AllenNLP's own, for a resumed run to continue exactly as if it had
never stopped.
"""

import json
import logging
import os
from typing import Any, Optional, Protocol, runtime_checkable

import torch
import torch.distributed as dist
from allennlp.common.checks import ConfigurationError
from allennlp.common.util import is_distributed
from allennlp.models import Model
from allennlp.training.callbacks.callback import TrainerCallback
from allennlp.training.metrics import Metric

logger = logging.getLogger(__name__)


@runtime_checkable
class CarriesState(Protocol):
    """
    A model that carries state between batches (the language models' LSTM states and mask generator): it
    says what that state is by `resume_state()` and takes it back by `load_resume_state()`.
    """

    def resume_state(self) -> dict[str, Any]: ...

    def load_resume_state(self, state: dict[str, Any]) -> None: ...


@TrainerCallback.register("maelmo_exact_resume")
class ExactResumeCallback(TrainerCallback):
    """
    Puts into every checkpoint the state that AllenNLP's trainer does not keep, so that `allennlp train -r`
    from a checkpoint taken in the middle of an epoch continues with the same updates as a run that never
    stopped (bit for bit on CPU):

    * torch's random generators (CPU and every GPU), which draw dropout masks;
    * a language model's own `resume_state()`: the LSTM states that `maelmo_masked_elmo_lm` and
      `maelmo_elmo_lm` carry from batch to batch, and the generator that draws the masks;
    * the running counts of the model's metrics, so the resumed epoch's training metrics cover the whole
      epoch.

    What AllenNLP restores by itself: weights, optimizer, learning-rate scheduler, metric tracker, epoch
    and batch counters. The data order is not stored: AllenNLP re-seeds python's and numpy's generators
    at start-up and replays the data loader up to the checkpoint, and the `maelmo_btbptt` loader's order
    depends only on the seed and the epoch number. Replaying draws no torch random numbers, so the torch
    generators restored here are still exact when training resumes.

    Under distributed training each worker has its own carried states (and random generators), while
    AllenNLP saves the callbacks of the first worker only and hands that state to every worker on `-r`.
    So before each save the `maelmo_atomic` checkpointer calls `before_checkpoint` on every worker, which
    gathers all workers' states into the first one's; each worker restores its own entry.

    A run resumed after its last epoch trains nothing; its metrics.json gets the last epoch's figures, read back
    from `metrics_epoch_N.json`, not AllenNLP's best_* alone.

    One figure AllenNLP cannot restore: the trainer's running training loss is a local variable of its
    epoch loop, so the resumed epoch's `training_loss` (not the model's metrics) averages only the batches
    run after the restart.

    Registered as a `TrainerCallback` with name "maelmo_exact_resume".

    # Parameters

    serialization_dir : `str`
        Passed by AllenNLP.
    """

    def __init__(self, serialization_dir: str) -> None:
        super().__init__(serialization_dir)
        self._model: Optional[Model] = None
        self._pending: Optional[dict[str, Any]] = None
        self._workers: Optional[list[dict[str, Any]]] = None  # every worker's state, gathered for a save

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        # AllenNLP loads the checkpoint (and calls load_state_dict) before on_start, and only here do we
        # get the model.
        self._model = trainer.model
        if self._pending is not None:
            state = self._pending
            if "workers" in state:
                workers = state["workers"]
                rank, world_size = (dist.get_rank(), dist.get_world_size()) if is_distributed() else (0, 1)
                if len(workers) != world_size:
                    raise ConfigurationError(
                        f"The checkpoint holds the state of {len(workers)} worker(s); this run has "
                        f"{world_size}. Resume with the distributed settings it was trained with."
                    )
                state = {**state, **workers[rank]}
            _restore(self._model, state)
            logger.info(
                "Restored the random generators, carried LSTM states and metric counts of the checkpoint."
            )
            self._pending = None

    def before_checkpoint(self) -> None:
        """Called on every worker before a save: gathers each worker's own state (a collective)."""
        if self._model is None or not is_distributed():
            return
        workers: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(workers, _to_cpu(self._worker_state()))
        self._workers = workers

    def state_dict(self) -> dict[str, Any]:
        if self._model is None:
            return {}
        state: dict[str, Any] = {
            "metrics": {name: _metric_state(metric) for name, metric in _metrics(self._model).items()},
            **self._worker_state(),
        }
        if self._workers is not None:
            state["workers"] = self._workers
            self._workers = None
        return state

    def _worker_state(self) -> dict[str, Any]:
        """What differs between workers: the random generators and the model's carried states."""
        state: dict[str, Any] = {
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        }
        # The callback knows no model class, only the protocol.
        if isinstance(self._model, CarriesState):
            state["model"] = self._model.resume_state()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._pending = state_dict or None

    def on_end(self, trainer, metrics=None, epoch=None, is_primary: bool = True, **kwargs) -> None:
        # A run resumed after its last epoch (stopped between that epoch's checkpoint and metrics.json) trains
        # nothing, and AllenNLP's metrics then hold the best_* figures alone: the last epoch's, which it wrote
        # before the checkpoint, are read back, so metrics.json says what the run that never stopped says.
        if not is_primary or metrics is None or epoch is None or "epoch" in metrics:
            return
        written = os.path.join(self.serialization_dir, f"metrics_epoch_{epoch}.json")
        if os.path.isfile(written):
            with open(written, encoding="utf-8") as stream:
                for key, value in json.load(stream).items():
                    metrics.setdefault(key, value)


def _restore(model: Model, state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch_rng"])
    if (
        state["cuda_rng"]
        and torch.cuda.is_available()
        and len(state["cuda_rng"]) == torch.cuda.device_count()
    ):
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    metrics = _metrics(model)
    for name, metric_state in state["metrics"].items():
        _load_metric_state(metrics[name], metric_state)
    if "model" in state:
        assert isinstance(model, CarriesState), "the checkpoint's model carried state, this one carries none"
        model.load_resume_state(state["model"])


def _to_cpu(value: Any) -> Any:
    """Tensors moved to the CPU, in nested dicts, lists and tuples (what a worker gathers to the first)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {key: _to_cpu(part) for key, part in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple of layer states
        return type(value)(*(_to_cpu(part) for part in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(part) for part in value)
    return value


def _metrics(model: Model) -> dict[str, Metric]:
    """Every `Metric` held by the model or its submodules, by a stable name."""
    return {
        f"{module_name}.{attribute}": value
        for module_name, module in model.named_modules()
        for attribute, value in vars(module).items()
        if isinstance(value, Metric)
    }


# A metric's running counts are plain numbers, tensors, lists of them or nested metrics: all things that
# torch.load(weights_only=True) reads back, so checkpoints stay safe to load. Anything else a metric holds
# (a task description, a callable) is configuration, rebuilt from the config, and is left out.
_STATE_TYPES = (Metric, torch.Tensor, list, int, float, bool, type(None))


def _metric_state(value: Any) -> Any:
    if isinstance(value, Metric):
        return {
            name: _metric_state(part) for name, part in vars(value).items() if isinstance(part, _STATE_TYPES)
        }
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, list):
        return [_metric_state(part) for part in value]
    return value


def _load_metric_state(metric: Metric, state: dict[str, Any]) -> None:
    for name, saved in state.items():
        current = getattr(metric, name)
        if isinstance(current, Metric):
            _load_metric_state(current, saved)
        elif isinstance(current, torch.Tensor):
            setattr(metric, name, saved.to(current.device))
        else:
            setattr(metric, name, saved)
