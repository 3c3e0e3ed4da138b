"""Prints a Markdown table of pre-training runs: validation perplexity, accuracy, updates and word-pieces/s.

    python scripts/summarize_runs.py runs/wt2        (one row per run directory that has a metrics.json)

Runs whose names differ only by a trailing `-seedN` are also summarised as mean ± standard deviation.
"""

import json
import re
import statistics
import sys
from pathlib import Path


def load(run: Path) -> dict:
    metrics = json.loads((run / "metrics.json").read_text())
    throughput_file = run / "throughput.json"
    throughput = json.loads(throughput_file.read_text()) if throughput_file.exists() else []
    perplexity = metrics.get("validation_perplexity")
    if perplexity is None:  # the ELMo baseline reports both directions and their mean
        perplexity = metrics.get("validation_perplexity_mean")
    return {
        "name": run.name,
        "perplexity": perplexity,
        "accuracy": metrics.get("validation_accuracy"),
        "training_perplexity": metrics.get("training_perplexity"),
        "epochs": metrics.get("epoch", 0) + 1,
        "wordpieces": sum(record["wordpieces"] for record in throughput),
        "wordpieces_per_second": (
            statistics.mean(r["wordpieces_per_second"] for r in throughput) if throughput else None
        ),
    }


def fmt(value, digits=2):
    return "–" if value is None else f"{value:,.{digits}f}"


def main(directory: str) -> None:
    runs = [load(run) for run in sorted(Path(directory).iterdir()) if (run / "metrics.json").exists()]
    print(
        "| run | epochs | validation masked perplexity | validation accuracy | training word-pieces "
        "| word-pieces/s |"
    )
    print("|---|---|---|---|---|---|")
    for run in runs:
        print(
            f"| {run['name']} | {run['epochs']} | {fmt(run['perplexity'])} | {fmt(run['accuracy'], 3)} | "
            f"{run['wordpieces']:,} | {fmt(run['wordpieces_per_second'], 0)} |"
        )
    groups: dict = {}
    for run in runs:
        match = re.fullmatch(r"(.*)-seed\d+", run["name"])
        if match and run["perplexity"] is not None:
            groups.setdefault(match.group(1), []).append(run)
    if groups:
        print("\n| runs (seeds) | validation masked perplexity | training perplexity |")
        print("|---|---|---|")
        for name, members in groups.items():
            values = [m["perplexity"] for m in members]
            training = [m["training_perplexity"] for m in members]
            spread = statistics.stdev(values) if len(values) > 1 else 0.0
            training_spread = statistics.stdev(training) if len(training) > 1 else 0.0
            print(
                f"| {name} ({len(members)}) | {statistics.mean(values):.2f} ± {spread:.2f} | "
                f"{statistics.mean(training):.2f} ± {training_spread:.2f} |"
            )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/wt2")
