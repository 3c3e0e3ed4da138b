"""
What a checkpoint must hold, beyond AllenNLP's own, for a resumed run to continue exactly as if it had
never stopped.
"""
import logging
from typing import Any, Dict, Optional

import torch
from allennlp.models import Model
from allennlp.training.callbacks.callback import TrainerCallback
from allennlp.training.metrics import Metric

logger = logging.getLogger(__name__)


@TrainerCallback.register("maelmo_exact_resume")
class ExactResumeCallback(TrainerCallback):
    """
    Puts into every checkpoint the state that AllenNLP's trainer does not keep, so that `allennlp train -r`
    from a checkpoint taken in the middle of an epoch continues with the same updates as a run that never
    stopped (bit for bit on CPU):

    * torch's random generators (CPU and every GPU), which draw dropout masks;
    * the model's own `resume_state()` where it has one: the LSTM states that `maelmo_masked_lm` and
      `maelmo_elmo_lm` carry from batch to batch, and the generator that draws the masks;
    * the running counts of the model's metrics, so the resumed epoch's training metrics cover the whole
      epoch.

    What AllenNLP restores by itself: weights, optimizer, learning-rate scheduler, metric tracker, epoch
    and batch counters. The data order is not stored: AllenNLP re-seeds python's and numpy's generators
    at start-up and replays the data loader up to the checkpoint, and the `maelmo_btbptt` loader's order
    depends only on the seed and the epoch number. Replaying draws no torch random numbers, so the torch
    generators restored here are still exact when training resumes.

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
        self._pending: Optional[Dict[str, Any]] = None

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        # AllenNLP loads the checkpoint (and calls load_state_dict) before on_start, and only here do we
        # get the model.
        self._model = trainer.model
        if self._pending is not None:
            _restore(self._model, self._pending)
            logger.info("Restored the random generators, carried LSTM states and metric counts of the checkpoint.")
            self._pending = None

    def state_dict(self) -> Dict[str, Any]:
        if self._model is None:
            return {}
        state: Dict[str, Any] = {
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            "metrics": {name: _metric_state(metric) for name, metric in _metrics(self._model).items()},
        }
        if hasattr(self._model, "resume_state"):
            state["model"] = self._model.resume_state()
        return state

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self._pending = state_dict or None


def _restore(model: Model, state: Dict[str, Any]) -> None:
    torch.set_rng_state(state["torch_rng"])
    if state["cuda_rng"] and torch.cuda.is_available() and len(state["cuda_rng"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    metrics = _metrics(model)
    for name, metric_state in state["metrics"].items():
        _load_metric_state(metrics[name], metric_state)
    if "model" in state:
        model.load_resume_state(state["model"])


def _metrics(model: Model) -> Dict[str, Metric]:
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
        return {name: _metric_state(part) for name, part in vars(value).items() if isinstance(part, _STATE_TYPES)}
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, list):
        return [_metric_state(part) for part in value]
    return value


def _load_metric_state(metric: Metric, state: Dict[str, Any]) -> None:
    for name, saved in state.items():
        current = getattr(metric, name)
        if isinstance(current, Metric):
            _load_metric_state(current, saved)
        elif isinstance(current, torch.Tensor):
            setattr(metric, name, saved.to(current.device))
        else:
            setattr(metric, name, saved)
