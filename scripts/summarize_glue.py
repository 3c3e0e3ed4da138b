"""Prints the Markdown table of GLUE dev results written by scripts/glue_experiments.sh.

    python scripts/summarize_glue.py runs/glue [GLUE_DIR]     (one row per encoder, one column per task)

Each cell is the task's GLUE metric from `allennlp evaluate` (dev_metrics.json): Matthews correlation for
CoLA, accuracy for the others, x 100 as in the paper's tables. A last row gives what always predicting
the dev set's most frequent label scores (GLUE_DIR, default $MAELMO_GLUE_DIR): the floor to beat.
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(
    0, str(Path(__file__).resolve().parent.parent)
)  # the repository root: its reproduction package
from reproduction.glue_floor import majority_score  # noqa: E402

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
