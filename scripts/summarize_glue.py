"""Prints the Markdown table of GLUE dev results written by scripts/glue_experiments.sh.

    python scripts/summarize_glue.py runs/glue [GLUE_DIR]     (one row per encoder, one column per task)

Each cell is the task's GLUE metric from `allennlp evaluate` (dev_metrics.json): Matthews correlation for
CoLA, accuracy for the others, x 100 as in the paper's tables. A last row gives what always predicting
the dev set's most frequent label scores (GLUE_DIR, default $MAELMO_GLUE_DIR): the floor to beat.
"""

import collections
import json
import os
import sys
from pathlib import Path

TASKS = {"rte": "RTE (acc)", "wnli": "WNLI (acc)", "cola": "CoLA (MCC)", "sst2": "SST-2 (acc)"}
ENCODERS = {
    "maelmo": "Masked ELMo, WikiText-2 (ft)",
    "elmo": "ELMo biLM baseline, WikiText-2 (ft)",
    "random": "random Masked ELMo encoder (ft)",
}


def score(path: Path) -> str:
    if not path.exists():
        return "–"
    return f"{100 * json.loads(path.read_text())['glue_score']:.1f}"


# Where each dev file keeps its label: (folder, column name, or column index for CoLA's header-less file).
DEV_LABELS = {
    "rte": ("RTE", "label"),
    "wnli": ("WNLI", "label"),
    "cola": ("CoLA", 1),
    "sst2": ("SST-2", "label"),
}


def majority_score(glue_dir: Path, task: str) -> str:
    folder, column = DEV_LABELS[task]
    path = glue_dir / folder / "dev.tsv"
    if not path.exists():
        return "–"
    rows = [line.rstrip("\n").split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
    if isinstance(column, str):
        index, rows = rows[0].index(column), rows[1:]
    else:
        index = column
    if task == "cola":
        return "0.0"  # a constant prediction has no correlation with the labels
    counts = collections.Counter(row[index] for row in rows)
    return f"{100 * max(counts.values()) / len(rows):.1f}"


def main(directory: str, glue_dir: str) -> None:
    root = Path(directory)
    print("| encoder | " + " | ".join(TASKS.values()) + " |")
    print("|---" * (len(TASKS) + 1) + "|")
    for encoder, label in ENCODERS.items():
        cells = [score(root / f"{encoder}-{task}" / "dev_metrics.json") for task in TASKS]
        print(f"| {label} | " + " | ".join(cells) + " |")
    floor = [majority_score(Path(glue_dir), task) for task in TASKS]
    print("| most frequent dev label (no model) | " + " | ".join(floor) + " |")


if __name__ == "__main__":
    runs = sys.argv[1] if len(sys.argv) > 1 else "runs/glue"
    main(runs, sys.argv[2] if len(sys.argv) > 2 else os.environ["MAELMO_GLUE_DIR"])
