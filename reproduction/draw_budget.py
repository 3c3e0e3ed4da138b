"""
(e) BERT* tuned on the budget it runs (arena.BERT_BUDGET: 2 epochs of all of WikiText-2, seed 1): each recipe's
validation curve, the recipe the tie rule chooses (the arena's BERT*), and whether each was still improving at its
end. Read by draw_report.py; the runs (arena.load_budget) are the `bert_budget` campaign's and the one it shares with
the arena's record (BERT_BUDGET_SHARED).
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

from maelmo_plugin.arena.rates import TIED
from reproduction.arena import BERT_BUDGET, BERT_WARMUP, budget_choice

# A run is still improving at its end when its last validation interval (about 250 updates: the campaign validates
# every 250) lowered the validation perplexity by more than the tie rule's margin: less, on one seed, reads as level.
STILL_IMPROVING = TIED


def last_fall(curve: list) -> tuple:
    """(the relative fall of the validation perplexity over the last validation interval, positive when falling;
    the interval's updates)."""
    before, end = curve[-2], curve[-1]
    return 1 - end["perplexity"] / before["perplexity"], end["updates"] - before["updates"]


def budget_table(runs: list) -> str:
    """The recipes' final perplexities and last falls, and the tie rule's choice, which the arena's BERT* runs."""
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
            for note, holds in (
                (f"the tuning campaign's, the record ({run['shared']})", bool(run["shared"])),
                ("chosen: the arena's BERT*", run is choice),
            )
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
            f"The choice waits for {len(BERT_BUDGET) - len(runs)} of the {len(BERT_BUDGET)} recipes; until then the "
            "arena's BERT* waits too."
        )
    else:
        lines.append(
            f"The tie rule (the lowest rate within {TIED:.0%} of the lowest final perplexity) chooses "
            f"{choice['variant']}-LN at {choice['lr']:g}, a warm-up of {choice['warmup']}, {choice['schedule']}: "
            "the arena's BERT* runs it."
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
