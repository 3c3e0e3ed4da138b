"""
The GLUE metrics of each task, with the score jiant selects models on as `glue_score`.
"""

import math
import warnings
from typing import Optional

import scipy.stats
import torch
import torch.distributed as dist
from allennlp.common.checks import ConfigurationError
from allennlp.common.util import is_distributed
from allennlp.data.vocabulary import Vocabulary
from allennlp.nn.util import dist_reduce_sum, distributed_device
from allennlp.training.metrics import CategoricalAccuracy, F1Measure, Metric

from maelmo_plugin.glue.tasks import BINARY_LABELS, resolve_glue_task

# The metric jiant (and the GLUE leaderboard) ranks each task on; tasks not listed use accuracy.
_SELECTION = {"cola": "mcc", "mrpc": "acc_and_f1", "qqp": "acc_and_f1", "stsb": "corr"}


@Metric.register("maelmo_glue")
class GlueMetric(Metric):
    """
    Accumulates a GLUE task's predictions and gold labels and gives the task's metrics:

    - CoLA: `mcc` (Matthews correlation, from the accumulated 2x2 confusion counts);
    - SST-2, MNLI, QNLI, RTE, WNLI (and AX): `accuracy`;
    - MRPC, QQP: `accuracy`, `f1` (of the positive class "1") and `acc_and_f1` = (accuracy + f1) / 2;
    - STS-B: `pearson`, `spearman` and `corr` = (pearson + spearman) / 2;

    plus `glue_score`, the one jiant selects on (mcc, accuracy, acc_and_f1 or corr), for
    `"validation_metric": "+glue_score"`. Values are Python floats, so checkpoints load with
    `weights_only`.

    Works in distributed training: accuracy and F1 are AllenNLP's metrics, the confusion counts are
    summed with `dist_reduce_sum`, and STS-B's predictions are gathered from every process at each
    call (AllenNLP 2.10's `PearsonCorrelation` refuses distributed mode and its `SpearmanCorrelation`
    re-gathers what it already gathered, so neither is used).

    Registered as a `Metric` with name "maelmo_glue".

    NOTE: a correlation that is undefined (fewer than 2 pairs, or constant predictions, as early in
    training) is reported as 0.0 rather than NaN, so that "best epoch" comparisons still work.

    # Parameters

    task : `str`
        A GLUE task name, as for the `maelmo_glue` dataset reader ("rte", "SST-2", "STS-B", ...).
    positive_label : `int`, optional (default = `1`)
        The index of label "1" in the `labels` namespace, for MRPC's and QQP's F1. AllenNLP orders a
        label namespace by frequency, so models should build the metric with
        `GlueMetric.from_vocab(task, vocab)`, which looks it up.
    """

    supports_distributed = True

    def __init__(self, task: str, positive_label: int = 1) -> None:
        self._task = resolve_glue_task(task)
        self._selection = _SELECTION.get(self._task.name, "accuracy")
        self._accuracy = CategoricalAccuracy()
        self._f1 = F1Measure(positive_label) if self._selection == "acc_and_f1" else None
        # F1Measure raises before its first call (and after a reset): until then, f1 is 0.0.
        self._f1_has_counts = False
        # CoLA: counts[gold, predicted]. MCC is the same whichever index "1" has.
        self._confusion = torch.zeros(2, 2, dtype=torch.long)
        # STS-B: every prediction and gold score so far, from all processes.
        self._scores: list[torch.Tensor] = []
        self._gold_scores: list[torch.Tensor] = []

    @classmethod
    def from_vocab(cls, task: str, vocab: Vocabulary, namespace: str = "labels") -> "GlueMetric":
        """The metric for `task`, with the positive class of MRPC's and QQP's F1 looked up in `vocab`."""
        labels = vocab.get_token_to_index_vocabulary(namespace)
        if resolve_glue_task(task).labels != BINARY_LABELS:
            return cls(task)
        if "1" not in labels:
            raise ConfigurationError(f"The vocabulary namespace {namespace!r} has no label '1': {labels}.")
        return cls(task, positive_label=labels["1"])

    def __call__(
        self,
        predictions: torch.Tensor,
        gold_labels: torch.Tensor,
        mask: Optional[torch.BoolTensor] = None,
    ) -> None:
        """
        # Parameters

        predictions : `torch.Tensor`
            Logits (or probabilities) of shape `(batch_size, num_classes)`; STS-B scores of shape
            `(batch_size,)` (or `(batch_size, 1)`).
        gold_labels : `torch.Tensor`
            Label indices of shape `(batch_size,)`; STS-B gold scores of shape `(batch_size,)`.
        mask : `torch.BoolTensor`, optional (default = `None`)
            Shape `(batch_size,)`: only the rows where it is true are counted.
        """
        predictions, gold_labels = self.detach_tensors(predictions, gold_labels)
        if mask is not None:
            keep = mask.detach().bool()
            predictions, gold_labels = predictions[keep], gold_labels[keep]
        if self._task.is_regression:
            self._add_scores(predictions, gold_labels)
            return
        self._check_classes(predictions)
        self._accuracy(predictions, gold_labels)
        if self._f1 is not None:
            self._f1(predictions, gold_labels)
            self._f1_has_counts = True
        if self._selection == "mcc":
            self._add_confusion(predictions, gold_labels)

    def get_metric(self, reset: bool = False) -> dict[str, float]:
        if self._task.is_regression:
            metrics = self._correlations()
        elif self._selection == "mcc":
            metrics = {"mcc": _matthews(self._confusion)}
        else:
            metrics = {"accuracy": float(self._accuracy.get_metric())}
        if self._f1 is not None:
            metrics["f1"] = float(self._f1.get_metric()["f1"]) if self._f1_has_counts else 0.0
            metrics["acc_and_f1"] = (metrics["accuracy"] + metrics["f1"]) / 2
        metrics["glue_score"] = metrics[self._selection]
        if reset:
            self.reset()
        return metrics

    def reset(self) -> None:
        self._accuracy.reset()
        if self._f1 is not None:
            self._f1.reset()
            self._f1_has_counts = False
        self._confusion.zero_()
        self._scores, self._gold_scores = [], []

    def _check_classes(self, predictions: torch.Tensor) -> None:
        num_classes = len(self._task.labels or ())
        if predictions.dim() != 2 or predictions.size(-1) != num_classes:
            raise ValueError(
                f"{self._task.folder} predictions must be logits of shape (batch_size, {num_classes}), "
                f"got {tuple(predictions.shape)}."
            )

    def _add_confusion(self, predictions: torch.Tensor, gold_labels: torch.Tensor) -> None:
        # Shape: (batch_size,), each gold * 2 + predicted, i.e. a cell of the 2x2 table.
        cells = gold_labels.long().reshape(-1) * 2 + predictions.argmax(dim=-1).reshape(-1)
        counts = torch.bincount(cells, minlength=4).reshape(2, 2)
        self._confusion += dist_reduce_sum(counts).cpu()

    def _add_scores(self, predictions: torch.Tensor, gold_labels: torch.Tensor) -> None:
        predictions, gold_labels = predictions.reshape(-1).float(), gold_labels.reshape(-1).float()
        if predictions.numel() != gold_labels.numel():
            raise ValueError(
                f"STS-B predictions must be one score per example: got {predictions.numel()} scores for "
                f"{gold_labels.numel()} gold scores (predictions of shape (batch_size,) expected)."
            )
        self._scores.append(_gather(predictions).cpu())
        self._gold_scores.append(_gather(gold_labels).cpu())

    def _correlations(self) -> dict[str, float]:
        scores = torch.cat(self._scores).double().numpy() if self._scores else None
        gold = torch.cat(self._gold_scores).double().numpy() if self._gold_scores else None
        pearson = _correlation(scipy.stats.pearsonr, scores, gold)
        spearman = _correlation(scipy.stats.spearmanr, scores, gold)
        return {"pearson": pearson, "spearman": spearman, "corr": (pearson + spearman) / 2}


def _matthews(confusion: torch.Tensor) -> float:
    """Matthews correlation of a 2x2 table counts[gold, predicted]; 0.0 when undefined, as in sklearn."""
    (tn, fp), (fn, tp) = confusion.tolist()
    denominator = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


def _correlation(function, scores, gold) -> float:
    if scores is None or len(scores) < 2:
        return 0.0
    with warnings.catch_warnings():
        # Constant input: scipy warns and returns NaN, reported as 0.0 below.
        warnings.simplefilter("ignore")
        value = float(function(scores, gold)[0])
    return 0.0 if math.isnan(value) else value


def _gather(tensor: torch.Tensor) -> torch.Tensor:
    """The 1-D `tensor` of every process, concatenated in rank order (sizes may differ)."""
    if not is_distributed():
        return tensor
    device = distributed_device()
    size = torch.tensor([tensor.numel()], device=device)
    sizes = [torch.zeros_like(size) for _ in range(dist.get_world_size())]
    dist.all_gather(sizes, size)
    longest = int(max(s.item() for s in sizes))
    # all_gather needs equal shapes: pad to the longest, then cut each part back to its size.
    padded = torch.zeros(longest, dtype=tensor.dtype, device=device)
    padded[: tensor.numel()] = tensor.to(device)
    parts = [torch.zeros_like(padded) for _ in sizes]
    dist.all_gather(parts, padded)
    return torch.cat([part[: int(s.item())] for part, s in zip(parts, sizes)])
