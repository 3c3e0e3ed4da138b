"""The floor of a GLUE dev set: what always answering its most frequent label scores (x 100, as GLUE reports)."""

import collections
from pathlib import Path

# Where each dev file keeps its label: (folder, column name, or column index for CoLA's header-less file).
DEV_LABELS: dict[str, tuple[str, str | int]] = {
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
