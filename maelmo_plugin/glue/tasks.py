"""
The nine GLUE tasks and the diagnostic set (Wang et al., 2019): each one's folder, columns and labels, which
the reader, the model, the metric and the predictor all read from here.
"""

from dataclasses import dataclass
from typing import Optional

from allennlp.common.checks import ConfigurationError

BINARY_LABELS = ("0", "1")
NLI_LABELS = ("entailment", "neutral", "contradiction")
ENTAILMENT_LABELS = ("entailment", "not_entailment")
STSB_MAX_SCORE = 5.0


@dataclass(frozen=True)
class GlueTask:
    """
    One GLUE task's file layout. Column names are lower-case header names; `sentence_columns` gives,
    for each sentence, the header names it may have.
    """

    name: str
    folder: str
    sentence_columns: tuple[tuple[str, ...], ...]
    label_columns: tuple[str, ...]
    # `None` for the regression task (STS-B).
    labels: Optional[tuple[str, ...]]
    # Column names of a file without a header row (CoLA train/dev), else `None`.
    headerless_columns: Optional[tuple[str, ...]] = None

    @property
    def is_pair(self) -> bool:
        return len(self.sentence_columns) == 2

    @property
    def is_regression(self) -> bool:
        return self.labels is None

    @property
    def field_names(self) -> tuple[str, ...]:
        return ("premise", "hypothesis") if self.is_pair else ("tokens",)


_SENTENCE_PAIR = (("sentence1",), ("sentence2",))
GLUE_TASKS: dict[str, GlueTask] = {
    task.name: task
    for task in [
        GlueTask(
            "cola",
            "CoLA",
            (("sentence",),),
            ("label",),
            BINARY_LABELS,
            headerless_columns=("source", "label", "original_label", "sentence"),
        ),
        GlueTask("sst2", "SST-2", (("sentence",),), ("label",), BINARY_LABELS),
        GlueTask("mrpc", "MRPC", (("#1 string",), ("#2 string",)), ("quality",), BINARY_LABELS),
        GlueTask("stsb", "STS-B", _SENTENCE_PAIR, ("score",), None),
        GlueTask("qqp", "QQP", (("question1",), ("question2",)), ("is_duplicate",), BINARY_LABELS),
        GlueTask("mnli", "MNLI", _SENTENCE_PAIR, ("gold_label",), NLI_LABELS),
        GlueTask("qnli", "QNLI", (("question",), ("sentence",)), ("label",), ENTAILMENT_LABELS),
        GlueTask("rte", "RTE", _SENTENCE_PAIR, ("label",), ENTAILMENT_LABELS),
        GlueTask("wnli", "WNLI", _SENTENCE_PAIR, ("label",), BINARY_LABELS),
        # diagnostic.tsv is unlabelled; diagnostic-full.tsv names its columns Premise/Hypothesis/Label.
        GlueTask("ax", "AX", (("sentence1", "premise"), ("sentence2", "hypothesis")), ("label",), NLI_LABELS),
    ]
}
_TASK_ALIASES = {"diagnostic": "ax"}


def resolve_glue_task(name: str) -> GlueTask:
    """The task named `name`: "rte", or a GLUE folder spelling such as "SST-2" or "STS-B" (any case)."""
    key = name.lower().replace("-", "").replace("_", "")
    key = _TASK_ALIASES.get(key, key)
    if key not in GLUE_TASKS:
        valid = ", ".join(f"{task.name} ({task.folder})" for task in GLUE_TASKS.values())
        raise ConfigurationError(
            f"Unknown GLUE task {name!r}; valid tasks are: {valid}. Set the reader's and the model's `task` "
            f"to one of them."
        )
    return GLUE_TASKS[key]
