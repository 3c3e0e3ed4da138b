"""
Fine-tunes a Hugging Face export of Masked ELMo (`allennlp maelmo-export`) on one GLUE task with
`transformers`' `Trainer`, the way a Hugging Face user would: the export's
`AutoModelForSequenceClassification` head (scalar mix, max pooling, linear), the task's train TSV,
evaluation on its dev TSV after every epoch with the task's GLUE metrics, and the best epoch's model (by
`glue_score`, the metric GLUE ranks the task on) kept in OUTPUT_DIR.

    .venv/bin/python scripts/finetune_glue_hf.py --export runs/sample/hf --task rte --glue-dir GLUE \
        --output-dir runs/rte-hf [--epochs 3 --batch-size 16 --learning-rate 2e-5]

The files are GLUE's (`download_glue_data.py`): GLUE_DIR/RTE/train.tsv and dev.tsv (MNLI: dev_matched.tsv).
They are read by the plugin's `maelmo_glue` reader and scored by its `GlueMetric`, so columns, labels and
metrics are the plugin's GLUE protocol's; STS-B is regression on score / 5, as there. OUTPUT_DIR gets the
best model (loadable with `trust_remote_code=True`, labels named in `id2label`), its tokenizer, and
`glue_metrics.json`: the dev metrics of every epoch and which epoch was kept.
"""

import argparse
import json
import os
import sys
from typing import Optional

import numpy
import torch
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    EvalPrediction,
    Trainer,
    TrainingArguments,
)

from maelmo_plugin.glue.dataset_readers.glue import GlueReader
from maelmo_plugin.glue.metrics import GlueMetric
from maelmo_plugin.glue.tasks import GlueTask


def read_examples(reader: GlueReader, path: str, tokenizer, max_length: int) -> list[dict[str, object]]:
    """The rows of a GLUE TSV as tokenized features with their label index (or score / 5)."""
    task = reader.task
    examples = []
    for instance in reader.read(path):
        # The reader's whitespace tokens, joined again: BERT's tokenizer splits on whitespace first anyway.
        sentences = [" ".join(token.text for token in instance[name].tokens) for name in task.field_names]
        features = tokenizer(*sentences, truncation=True, max_length=max_length)
        label = instance["label"]
        features["labels"] = float(label.tensor) if task.is_regression else task.labels.index(label.label)
        examples.append(dict(features))
    return examples


def compute_metrics_for(task: GlueTask):
    """`Trainer`'s `compute_metrics`: the plugin's GLUE metrics of the task on the dev predictions."""

    def compute_metrics(prediction: EvalPrediction) -> dict[str, float]:
        metric = GlueMetric(task.name)
        logits = torch.as_tensor(numpy.asarray(prediction.predictions))
        gold = torch.as_tensor(numpy.asarray(prediction.label_ids))
        metric(logits.squeeze(-1) if task.is_regression else logits, gold)
        return metric.get_metric(reset=True)

    return compute_metrics


def main(argv: Optional[list[str]] = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--export", required=True, help="a directory written by `allennlp maelmo-export`")
    parser.add_argument("--task", required=True, help="cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte or wnli")
    parser.add_argument("--glue-dir", required=True, help="GLUE's data: RTE/, SST-2/, ...")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument(
        "--max-length", type=int, default=128, help="word-pieces per example, [CLS] and [SEP] included"
    )
    parser.add_argument("--max-steps", type=int, default=-1, help="stop after this many updates (-1: none)")
    parser.add_argument("--seed", type=int, default=13370)
    args = parser.parse_args(argv)

    reader = GlueReader(args.task)
    task = reader.task
    folder = os.path.join(args.glue_dir, task.folder)
    tokenizer = AutoTokenizer.from_pretrained(args.export)
    train = read_examples(reader, os.path.join(folder, "train.tsv"), tokenizer, args.max_length)
    dev_file = "dev_matched.tsv" if task.name == "mnli" else "dev.tsv"
    dev = read_examples(reader, os.path.join(folder, dev_file), tokenizer, args.max_length)

    labels = {} if task.is_regression else {"id2label": dict(enumerate(task.labels))}
    if labels:
        labels["label2id"] = {label: index for index, label in labels["id2label"].items()}
    model = AutoModelForSequenceClassification.from_pretrained(
        args.export,
        trust_remote_code=True,
        num_labels=1 if task.is_regression else len(task.labels),
        problem_type="regression" if task.is_regression else "single_label_classification",
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
        save_total_limit=1,
        load_best_model_at_end=True,
        metric_for_best_model="glue_score",
        greater_is_better=True,
        logging_strategy="epoch",
        report_to=[],
        seed=args.seed,
        # Checkpoints in safetensors, like the export: no pickle to load back.
        save_safetensors=True,
        # Pinned memory only speeds up copies to a GPU; without one torch warns at every epoch.
        dataloader_pin_memory=torch.cuda.is_available(),
    )
    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=train,
        eval_dataset=dev,
        data_collator=DataCollatorWithPadding(tokenizer),
        compute_metrics=compute_metrics_for(task),
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
        "task": task.name,
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
