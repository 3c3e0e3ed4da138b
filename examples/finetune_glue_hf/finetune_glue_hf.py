"""
Fine-tunes a Hugging Face export of Masked ELMo (`allennlp maelmo-export`) on one GLUE task with
`transformers`' `Trainer`, with nothing of AllenNLP or the plugin: the export's
`AutoModelForSequenceClassification` head (scalar mix, max pooling, linear), the task's train TSV,
evaluation on its dev TSV after every epoch with the task's GLUE metrics, and the best epoch's model (by
`glue_score`, the metric GLUE ranks the task by) kept in OUTPUT_DIR.

    python finetune_glue_hf.py --export runs/sample/hf --task rte --glue-dir GLUE --output-dir runs/rte-hf \
        [--epochs 3 --batch-size 32 --learning-rate 3e-4]

It imports only the standard library, numpy, torch, transformers (and accelerate, which `Trainer` needs),
scikit-learn and scipy: copy it beside an export and run it anywhere those are installed, under
transformers 4.x or 5.x. The files are those GLUE's `download_glue_data.py` writes: GLUE_DIR/RTE/train.tsv
and dev.tsv (MNLI: dev_matched.tsv); nothing comes from the hub. STS-B is regression on score / 5. OUTPUT_DIR
gets the best model (loadable with `trust_remote_code=True`, labels named in `id2label`), its tokenizer, and
`glue_metrics.json`: the dev metrics of every epoch and which epoch was kept.
"""

import argparse
import csv
import itertools
import json
import math
import os
import sys
import warnings
from collections.abc import Iterator
from typing import NamedTuple, Optional, Union

import numpy
import torch
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
    set_seed,
)


class GlueTask(NamedTuple):
    """Where one GLUE task's train and dev files hold its sentences and label. Column names are lower-case."""

    folder: str
    sentences: tuple[str, ...]
    label: str
    # The label strings, in the order of the model's outputs; None for the regression task (STS-B).
    labels: Optional[tuple[str, ...]]
    dev_file: str = "dev.tsv"
    # The columns of a file without a header row (CoLA's train and dev); None where the files have one.
    headerless: Optional[tuple[str, ...]] = None


# The nine tasks, as GLUE's download script writes them (the plugin's maelmo_plugin/glue/tasks.py agrees).
BINARY = ("0", "1")
NLI = ("entailment", "neutral", "contradiction")
ENTAILMENT = ("entailment", "not_entailment")
PAIR = ("sentence1", "sentence2")
TASKS = {
    "cola": GlueTask(
        "CoLA", ("sentence",), "label", BINARY, headerless=("source", "label", "original_label", "sentence")
    ),
    "sst2": GlueTask("SST-2", ("sentence",), "label", BINARY),
    "mrpc": GlueTask("MRPC", ("#1 string", "#2 string"), "quality", BINARY),
    "stsb": GlueTask("STS-B", PAIR, "score", None),
    "qqp": GlueTask("QQP", ("question1", "question2"), "is_duplicate", BINARY),
    "mnli": GlueTask("MNLI", PAIR, "gold_label", NLI, dev_file="dev_matched.tsv"),
    "qnli": GlueTask("QNLI", ("question", "sentence"), "label", ENTAILMENT),
    "rte": GlueTask("RTE", PAIR, "label", ENTAILMENT),
    "wnli": GlueTask("WNLI", PAIR, "label", BINARY),
}
STSB_MAX_SCORE = 5.0
# One example: its sentence(s) and its label's index (STS-B: score / 5).
Example = tuple[tuple[str, ...], Union[int, float]]

# The metric GLUE ranks each task by, reported as `glue_score`; the tasks not listed are ranked by accuracy.
RANKED_BY = {"cola": "mcc", "mrpc": "acc_and_f1", "qqp": "acc_and_f1", "stsb": "corr"}


def glue_metrics(task: str, predictions: numpy.ndarray, labels: numpy.ndarray) -> dict[str, float]:
    """The GLUE metrics of `task`: logits (STS-B: scores) against label indices (STS-B: scores)."""
    ranked_by = RANKED_BY.get(task, "accuracy")
    if ranked_by == "corr":
        scores = predictions.reshape(-1)
        pearson, spearman = (correlation(function, scores, labels) for function in (pearsonr, spearmanr))
        metrics = {"pearson": pearson, "spearman": spearman, "corr": (pearson + spearman) / 2}
    else:
        predicted = predictions.argmax(-1)
        if ranked_by == "mcc":
            metrics = {"mcc": float(matthews_corrcoef(labels, predicted))}  # 0.0 where undefined
        else:
            metrics = {"accuracy": float(accuracy_score(labels, predicted))}
        if ranked_by == "acc_and_f1":
            # F1 of the positive class, label "1" (index 1); 0.0 while nothing is predicted positive.
            metrics["f1"] = float(f1_score(labels, predicted, zero_division=0))
            metrics["acc_and_f1"] = (metrics["accuracy"] + metrics["f1"]) / 2
    metrics["glue_score"] = metrics[ranked_by]
    return metrics


def correlation(function, scores: numpy.ndarray, gold: numpy.ndarray) -> float:
    """Pearson's or Spearman's r; 0.0 where undefined (constant predictions, as early in training), so that
    the best epoch can still be chosen."""
    if len(scores) < 2:
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on constant input, then returns NaN
        value = float(function(scores, gold)[0])
    return 0.0 if math.isnan(value) else value


class GlueFileError(ValueError):
    """A file that is not the task's GLUE TSV, or a malformed row; the message names the file and line."""


def read_glue_file(path: str, task: GlueTask, skip_malformed_rows: bool = False) -> list[Example]:
    """The examples of a GLUE train or dev TSV; a malformed row is an error, or skipped and reported."""
    if not os.path.isfile(path):
        raise GlueFileError(
            f"{path} does not exist. --glue-dir is the folder GLUE's download_glue_data.py wrote: it must "
            f"hold {task.folder}/train.tsv and {task.folder}/{task.dev_file}."
        )
    examples, skipped = [], []
    # utf-8-sig: MRPC's header starts with a byte-order mark. QUOTE_NONE: GLUE's fields are not quoted, and
    # one may begin with '"' (default quoting would read on to the next quote, merging rows).
    with open(path, encoding="utf-8-sig", newline="") as file:
        reader = csv.reader(file, delimiter="\t", quoting=csv.QUOTE_NONE)
        # Blank lines are not rows (a file may end with one).
        rows: Iterator[tuple[int, list[str]]] = ((reader.line_num, fields) for fields in reader if fields)
        first = next(rows, None)
        if first is None:
            raise GlueFileError(f"{path} is empty: expected GLUE's {task.folder} {os.path.basename(path)}.")
        header = [name.strip().lower() for name in first[1]]
        if task.headerless is not None and task.label not in header:
            header, rows = list(task.headerless), itertools.chain([first], rows)
        positions = [_column(header, name, path, first[0], task) for name in (*task.sentences, task.label)]
        for line, fields in rows:
            try:
                examples.append(_example(fields, header, positions, task))
            except ValueError as error:
                if not skip_malformed_rows:
                    raise GlueFileError(
                        f"{path}, line {line}: {error}. Fix the row, or give --skip-malformed-rows to skip "
                        f"such rows (they are counted and reported)."
                    ) from None
                skipped.append(f"line {line}: {error}")
    if skipped:
        print(f"Skipped {len(skipped)} malformed row(s) of {path}; the first: {skipped[0]}.", file=sys.stderr)
    return examples


def _column(header: list[str], name: str, path: str, line: int, task: GlueTask) -> int:
    if name not in header:
        test_file = " (GLUE's test.tsv has no labels: train on train.tsv)" if name == task.label else ""
        raise GlueFileError(
            f"{path}, line {line} (header): no {name!r} column in {header}{test_file}. Is this GLUE's "
            f"{task.folder} file, and is --task right?"
        )
    return header.index(name)


def _example(fields: list[str], header: list[str], positions: list[int], task: GlueTask) -> Example:
    if len(fields) != len(header):
        raise ValueError(
            f"the row has {len(fields)} tab-separated columns, expected {len(header)} ({', '.join(header)})"
        )
    *sentences, label = (fields[position].strip() for position in positions)
    if not all(sentences):
        raise ValueError("a sentence is empty")
    if task.labels is not None:
        if label not in task.labels:
            raise ValueError(f"the label {label!r} is not one of {list(task.labels)}")
        return tuple(sentences), task.labels.index(label)
    try:
        score = float(label)
    except ValueError:
        raise ValueError(f"the score {label!r} is not a number") from None
    if not 0.0 <= score <= STSB_MAX_SCORE:  # written so that NaN fails too
        raise ValueError(f"the score {label!r} is outside [0, {STSB_MAX_SCORE:g}]")
    return tuple(sentences), score / STSB_MAX_SCORE


def features(examples: list[Example], tokenizer, max_length: int) -> list[dict[str, object]]:
    """Each example as the tokenizer's `[CLS] a [SEP] (b [SEP])` ids with its `labels`, for `Trainer`."""
    return [
        {**tokenizer(*sentences, truncation=True, max_length=max_length), "labels": label}
        for sentences, label in examples
    ]


def main(argv: Optional[list[str]] = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--export", required=True, help="a directory written by `allennlp maelmo-export`")
    parser.add_argument("--task", required=True, choices=list(TASKS))
    parser.add_argument("--glue-dir", required=True, help="GLUE's data: the folder holding RTE/, SST-2/, ...")
    parser.add_argument(
        "--output-dir",
        required=True,
        help="gets the kept model, its tokenizer, glue_metrics.json, checkpoints/",
    )
    parser.add_argument(
        "--epochs", type=float, default=3.0, help="passes over train.tsv (default: %(default)s)"
    )
    parser.add_argument(
        "--batch-size", type=int, default=32, help="examples per update (default: %(default)s)"
    )
    parser.add_argument(
        "--learning-rate",
        type=float,
        default=3e-4,
        help="AdamW's peak, decayed linearly (default: %(default)s)",
    )
    parser.add_argument(
        "--max-length", type=int, default=128, help="word-pieces per example, [CLS] and [SEP] included"
    )
    parser.add_argument("--max-steps", type=int, default=-1, help="stop after this many updates (-1: none)")
    parser.add_argument("--seed", type=int, default=13370, help="the head's initialisation, order, dropout")
    parser.add_argument(
        "--skip-malformed-rows", action="store_true", help="skip bad rows (reported) rather than stop"
    )
    args = parser.parse_args(argv)

    task = TASKS[args.task]
    folder = os.path.join(args.glue_dir, task.folder)
    # The files are read before anything is loaded, so that a bad file stops the run at once.
    try:
        train_examples = read_glue_file(os.path.join(folder, "train.tsv"), task, args.skip_malformed_rows)
        dev_examples = read_glue_file(os.path.join(folder, task.dev_file), task, args.skip_malformed_rows)
    except GlueFileError as error:
        parser.error(str(error))
    # trust_remote_code: 5.x's AutoTokenizer reads config.json first and would ask about the custom code.
    tokenizer = AutoTokenizer.from_pretrained(args.export, trust_remote_code=True)
    train = features(train_examples, tokenizer, args.max_length)
    dev = features(dev_examples, tokenizer, args.max_length)

    # Before the model is built: the head's initialisation is drawn when it is loaded, before Trainer seeds.
    set_seed(args.seed)
    labels = {}
    if task.labels is not None:
        labels = {
            "id2label": dict(enumerate(task.labels)),
            "label2id": {name: i for i, name in enumerate(task.labels)},
        }
    model = AutoModelForSequenceClassification.from_pretrained(
        args.export,
        trust_remote_code=True,
        num_labels=1 if task.labels is None else len(task.labels),
        problem_type="regression" if task.labels is None else "single_label_classification",
        **labels,
    )
    training_args = TrainingArguments(
        output_dir=os.path.join(args.output_dir, "checkpoints"),
        num_train_epochs=args.epochs,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        eval_strategy="epoch",
        save_strategy="epoch",
        # The best epoch's checkpoint is kept (and the last one, to resume from), the others deleted.
        # Checkpoints are safetensors (the default of 4.x since 4.35, and of 5.x): no pickle to load back.
        save_total_limit=1,
        load_best_model_at_end=True,
        metric_for_best_model="glue_score",
        greater_is_better=True,
        logging_strategy="epoch",
        report_to=[],
        seed=args.seed,
        # Pinned memory only speeds up copies to a GPU; without one torch warns at every epoch.
        dataloader_pin_memory=torch.cuda.is_available(),
    )
    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=train,
        eval_dataset=dev,
        data_collator=DataCollatorWithPadding(tokenizer),
        compute_metrics=lambda prediction: glue_metrics(
            args.task, prediction.predictions, prediction.label_ids
        ),
    )
    trainer.train()
    trainer.save_model(args.output_dir)
    tokenizer.save_pretrained(args.output_dir)
    epochs = [
        {key.removeprefix("eval_"): value for key, value in record.items()}
        for record in trainer.state.log_history
        if "eval_glue_score" in record
    ]
    best = max(epochs, key=lambda record: record["glue_score"])
    summary = {
        "task": args.task,
        "train_examples": len(train),
        "dev_examples": len(dev),
        "epochs": epochs,
        "best_epoch": best["epoch"],
        "best_glue_score": best["glue_score"],
        "best_checkpoint": trainer.state.best_model_checkpoint,
    }
    with open(os.path.join(args.output_dir, "glue_metrics.json"), "w", encoding="utf-8") as metrics_file:
        json.dump(summary, metrics_file, indent=2)
    print(json.dumps({key: summary[key] for key in ("task", "best_epoch", "best_glue_score")}))
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
