"""
(e) BERT* tuned on the budget it runs (arena.BERT_BUDGET: 2 epochs of all of WikiText-2, seed 1): each recipe's
validation curve, the recipe the tie rule chooses, and whether each was still improving at its end. Read by
draw_report.py; the runs are the `bert_budget` campaign's and the one it shares with the arena (BERT_BUDGET_SHARED).
"""

import json
from pathlib import Path
from typing import Optional

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

from reproduction.arena import BERT_BUDGET, BERT_BUDGET_SHARED, BERT_WARMUP, bert_budget_name
from reproduction.tuning import TIED, chosen

# A run is still improving at its end when its last validation interval (about 250 updates: the campaign validates
# every 250) lowered the validation perplexity by more than the tie rule's margin: less, on one seed, reads as level.
STILL_IMPROVING = TIED


def load_budget(results: Path) -> list:
    """[{name, variant, lr, warmup, schedule, curve, shared}]: the campaign's kept runs, and those it reads from
    the arena (BERT_BUDGET_SHARED) once they are kept; in BERT_BUDGET's order."""
    paths = {path.parent.name: path for path in (results / "bert_budget").glob("*/validation_curve.json")}
    for name, arena_run in BERT_BUDGET_SHARED.items():
        path = results / "arena_encoders" / arena_run / "validation_curve.json"
        if path.exists():
            paths[name] = path
    runs = []
    for layer_norm, rate, warmup, schedule in BERT_BUDGET:
        name = bert_budget_name(layer_norm, rate, warmup, schedule)
        if name in paths:
            runs.append(
                {
                    "name": name,
                    "variant": layer_norm,
                    "lr": float(rate),
                    "warmup": warmup,
                    "schedule": schedule,
                    "curve": json.loads(paths[name].read_text()),
                    "shared": BERT_BUDGET_SHARED.get(name),
                }
            )
    return runs


def last_fall(curve: list) -> tuple:
    """(the relative fall of the validation perplexity over the last validation interval, positive when falling;
    the interval's updates)."""
    before, end = curve[-2], curve[-1]
    return 1 - end["perplexity"] / before["perplexity"], end["updates"] - before["updates"]


def budget_choice(runs: list) -> Optional[dict]:
    """The tie rule's recipe (tuning.chosen: the lowest rate within TIED of the lowest final perplexity) once every
    recipe of BERT_BUDGET is kept; None before."""
    if len(runs) < len(BERT_BUDGET):
        return None
    return chosen("bert", runs)


def is_the_arenas(run: dict, arena_choice: Optional[tuple]) -> bool:
    """Whether `run` is the recipe the arena's BERT* runs: the tuning campaign's (rate, LayerNorm), BERT_WARMUP,
    linear decay."""
    return arena_choice is not None and (run["lr"], run["variant"], run["warmup"], run["schedule"]) == (
        *arena_choice,
        BERT_WARMUP,
        "linear",
    )


def budget_table(runs: list, arena_choice: Optional[tuple]) -> str:
    """The recipes' final perplexities and last falls, and the tie rule's choice against the arena's recipe."""
    lines = [
        "### (e) BERT* tuned on the budget it runs: 2 epochs of all of WikiText-2, seed 1",
        "",
        "| LayerNorm | rate | warm-up (updates) | schedule | final validation masked perplexity "
        "| fall over the last validation interval | |",
        "|---|---|---|---|---|---|---|",
    ]
    choice = budget_choice(runs)
    for run in runs:
        fall, updates = last_fall(run["curve"])
        notes = [
            note
            for note, holds in (("the arena's", is_the_arenas(run, arena_choice)), ("chosen", run is choice))
            if holds
        ]
        still = "still improving" if fall > STILL_IMPROVING else "level"
        lines.append(
            f"| {run['variant']} | {run['lr']:g} | {run['warmup']} | {run['schedule']} "
            f"| {run['curve'][-1]['perplexity']:.1f} | {fall:.1%} in {updates} updates ({still}) | {', '.join(notes)} |"
        )
    lines.append("")
    if choice is None:
        lines.append(
            f"The choice waits for {len(BERT_BUDGET) - len(runs)} of the {len(BERT_BUDGET)} recipes."
        )
    else:
        changes = (
            "holds" if is_the_arenas(choice, arena_choice) else "changes: the arena's BERT* is to run again"
        )
        lines.append(
            f"The tie rule (the lowest rate within {TIED:.0%} of the lowest final perplexity) chooses "
            f"{choice['variant']}-LN at {choice['lr']:g}, a warm-up of {choice['warmup']}, {choice['schedule']}; "
            f"the arena's recipe {changes}."
        )
    return "\n".join(lines) + "\n"


def draw_budget(runs: list, figures: Path) -> None:
    """Validation masked perplexity against updates, one curve per recipe: a colour per LayerNorm and rate, the
    line's style for the warm-up and the schedule."""
    figure, axis = plt.subplots(figsize=(9, 5.5))
    colours = dict(
        zip(
            sorted({(run["variant"], run["lr"]) for run in runs}),
            plt.rcParams["axes.prop_cycle"].by_key()["color"] * 2,
        )
    )
    for run in runs:
        style = ":" if run["schedule"] == "constant" else ("-" if run["warmup"] == BERT_WARMUP else "--")
        axis.plot(
            [point["updates"] for point in run["curve"]],
            [point["perplexity"] for point in run["curve"]],
            style,
            color=colours[run["variant"], run["lr"]],
            label=f"{run['variant']}-LN {run['lr']:g}, warm-up {run['warmup']}, {run['schedule']}",
        )
    axis.set_xlabel("updates (optimizer steps)")
    axis.set_ylabel("validation masked perplexity (per token, log scale)")
    axis.set_yscale("log")
    axis.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    axis.yaxis.set_minor_formatter(ticker.FormatStrFormatter("%g"))
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize="small")
    axis.set_title("(e) BERT* on the budget it runs: 2 epochs of WikiText-2, seed 1")
    figure.tight_layout()
    figures.mkdir(parents=True, exist_ok=True)
    figure.savefig(figures / "bert_budget.png", dpi=110)
    plt.close(figure)
