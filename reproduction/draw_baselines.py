"""
The baselines of the fair arena, for draw_report.py: the tuning campaign's figure and table (for each
encoder, the validation curve of every learning rate on the same small budget, and the rate chosen, the one
with the lowest final validation perplexity, never a GLUE score), and the table that says what each arena
encoder is (parameters, embedding, chosen rate, pre-training CPU time, final perplexity over its seeds, beside
the word-frequency floor).
"""

import json
import statistics
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib import ticker

from reproduction.arena import BERT_BUDGET, budget_choice, load_budget
from reproduction.tuning import chosen, sweep

ENCODERS = {
    "masked_elmo": "Masked ELMo (Adam)",
    "bert": "BERT* (AdamW; post- or pre-LayerNorm)",
    "elmo": "ELMo biLM (Adam or bilm-tf's Adagrad)",
}
PERPLEXITY = {"masked_elmo": "masked", "bert": "masked", "elmo": "next/previous-word-piece"}
# A point more than this many times the lowest perplexity before it: the run diverged there (and maybe recovered).
DIVERGED = 1.5


VARIANTS = {
    "post": "post-LN",
    "pre": "pre-LN",
    "adam": "Adam",
    "adagrad": "Adagrad",
    "zero": "Adam from zero states",
}
STYLES = {"pre": "--", "adagrad": "--", "zero": "-."}  # dashed: an encoder's second variant; the biLM's third


def label(run: dict) -> str:
    return f"{VARIANTS[run['variant']] + ', ' if run['variant'] else ''}lr {run['lr']:g}"


def diverged_at(curve: list):
    """The first update at which the perplexity rose above DIVERGED times its lowest value so far, or None."""
    lowest = float("inf")
    for point in curve:
        if point["perplexity"] > DIVERGED * lowest:
            return point["updates"]
        lowest = min(lowest, point["perplexity"])
    return None


def mark(encoder: str, runs: list) -> str:
    """What the best run of `runs` is: the chosen one once the whole sweep has run, the best so far before."""
    return "chosen" if len(runs) == len(sweep(encoder)) else "best so far"


def y_range(runs: list) -> tuple:
    """The perplexities a sweep's panel shows: every point of the runs that never diverged, with a margin. A run
    that ran away (10^17) would otherwise squash every other curve into a line; it is drawn up to the top edge
    and its final value written there."""
    kept = [run for run in runs if diverged_at(run["curve"]) is None] or runs
    perplexities = [point["perplexity"] for run in kept for point in run["curve"]]
    return 0.9 * min(perplexities), 1.25 * max(perplexities)


def draw_tuning(runs: dict, figures: Path) -> None:
    encoders = [encoder for encoder in ENCODERS if encoder in runs]
    figure, axes = plt.subplots(1, len(encoders), figsize=(max(6 * len(encoders), 9), 7), squeeze=False)
    for axis, encoder in zip(axes[0], encoders):
        best, word = chosen(encoder, runs[encoder]), mark(encoder, runs[encoder])
        for run in runs[encoder]:
            curve = run["curve"]
            style = STYLES.get(run["variant"], "-")
            # Within a variant (optimizer, LayerNorm placement), darker for a higher rate: a colour never repeats.
            rates = sorted(other["lr"] for other in runs[encoder] if other["variant"] == run["variant"])
            shade = 0.15 + 0.75 * rates.index(run["lr"]) / max(len(rates) - 1, 1)
            axis.plot(
                [point["updates"] for point in curve],
                [point["perplexity"] for point in curve],
                style,
                color=plt.get_cmap("plasma_r")(shade),
                linewidth=2.5 if run is best else 1.2,
                label=label(run) + (f" ({word})" if run is best else ""),
            )
        bottom, top = y_range(runs[encoder])
        for run in runs[encoder]:
            curve = run["curve"]
            leaving = next((point["updates"] for point in curve if point["perplexity"] > top), None)
            if leaving is not None:
                axis.annotate(
                    f"{label(run)}: off the scale from update {leaving},\n"
                    f"ends at {readable(curve[-1]['perplexity'])} (diverged)",
                    xy=(leaving, top),
                    xytext=(0.35, 0.8),
                    textcoords="axes fraction",
                    fontsize="small",
                    arrowprops={"arrowstyle": "->"},
                )
        axis.set_title(ENCODERS[encoder])
        axis.set_xlabel("updates (optimizer steps, 2,048 word-pieces each)")
        axis.set_ylabel(f"validation {PERPLEXITY[encoder]} perplexity (log scale)")
        axis.set_yscale("log")
        axis.set_ylim(bottom, top)
        axis.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        axis.yaxis.set_minor_locator(ticker.LogLocator(subs=(2, 3, 5)))  # labels that never overlap
        axis.yaxis.set_minor_formatter(ticker.FormatStrFormatter("%g"))
        axis.grid(True, which="both", alpha=0.3)
        # Below the plot: the biLM's sweep has a dozen curves, which a legend inside would cover.
        axis.legend(fontsize="small", ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    figure.suptitle(
        "Learning-rate sweeps on one budget: 4 epochs of WikiText-2's first 4,000 lines, seed 1\n"
        "(darker: a higher rate; dashed: the second optimizer or LayerNorm placement; dash-dot: the biLM from zero "
        "states; thick: the lowest final "
        "validation perplexity, the chosen rate once the sweep is complete)"
    )
    figure.tight_layout()
    figures.mkdir(parents=True, exist_ok=True)
    figure.savefig(figures / "tuning.png", dpi=110)
    plt.close(figure)


def tuning_table(runs: dict) -> str:
    lines = [
        "### Tuning: each encoder's learning rate on the same budget",
        "",
        "| encoder | setting | final validation perplexity | lowest | updates | diverged at update |",
        "|---|---|---|---|---|---|",
    ]
    for encoder in (encoder for encoder in ENCODERS if encoder in runs):
        best, word = chosen(encoder, runs[encoder]), mark(encoder, runs[encoder])
        for run in runs[encoder]:
            curve = run["curve"]
            note = f" **({word})**" if run is best else ""
            lines.append(
                f"| {ENCODERS[encoder]} | {label(run)}{note} | {readable(curve[-1]['perplexity'])} | "
                f"{readable(min(point['perplexity'] for point in curve))} | {curve[-1]['updates']} | "
                f"{diverged_at(curve) or '–'} |"
            )
        rates = sorted({run["lr"] for run in runs[encoder] if best and run["variant"] == best["variant"]})
        if best and best["lr"] in (rates[0], rates[-1]) and len(rates) > 1:
            lines.append(
                f"| {ENCODERS[encoder]} | the best rate is at the edge of the grid: widen it | | | | |"
            )
    return "\n".join(lines) + "\n"


def readable(perplexity: float) -> str:
    """A perplexity to one decimal, or as a power of ten once a run has run away (434294789850443520.0 reads
    as 4.3 x 10^17)."""
    if perplexity < 1e5:
        return f"{perplexity:.1f}"
    mantissa, exponent = f"{perplexity:.1e}".split("e")
    return f"{mantissa} x 10^{int(exponent)}"


def baselines_table(tuning: dict, arena_dir: Path) -> str:
    """What each arena encoder is; empty before baseline_facts.py has written arena_encoders/baselines.json."""
    facts_file = arena_dir / "baselines.json"
    if not facts_file.exists():
        return ""
    facts = json.loads(facts_file.read_text())
    floor = (
        f"Word-frequency floor (each word-piece from its training frequency, no context): "
        f"{facts['word_frequency_floor']:.1f}; vocabulary {facts['vocabulary']}."
    )
    header = (
        "| encoder | parameters (all; encoder alone) | embedding | rate chosen | pre-training CPU-minutes | "
        "final validation perplexity |"
    )
    lines = ["### The arena's encoders", "", floor, "", header, "|---|---|---|---|---|---|"]
    budget = load_budget(arena_dir.parent)
    for encoder, counts in facts["parameters"].items():
        done, planned = len(tuning.get(encoder, [])), len(sweep(encoder))
        choice = (
            label(chosen(encoder, tuning[encoder]))
            if done == planned
            else f"tuning: {done} of {planned} rates run"
        )
        if encoder == "bert":  # tuned again on the budget it runs (e): the arena's BERT* is that choice
            recipe = budget_choice(budget)
            choice = (
                f"{label(recipe)}, warm-up {recipe['warmup']}, {recipe['schedule']} (its budget, e)"
                if recipe
                else f"its budget (e): {len(budget)} of {len(BERT_BUDGET)} recipes run"
            )
        curves = [
            json.loads(path.read_text())
            for path in sorted(arena_dir.glob(f"{encoder}-seed*/validation_curve.json"))
        ]
        minutes = (
            f"{statistics.mean(curve[-1]['cpu_seconds'] for curve in curves) / 60:.0f}" if curves else "–"
        )
        finals = [curve[-1]["perplexity"] for curve in curves]
        final = (
            f"{statistics.mean(finals):.1f} ± {statistics.stdev(finals):.1f} ({len(finals)} seeds)"
            if len(finals) > 1
            else f"{finals[0]:.1f} (1 seed)"
            if finals
            else "–"
        )
        lines.append(
            f"| {ENCODERS[encoder]}, {PERPLEXITY[encoder]} perplexity | {counts['total'] / 1e6:.2f}M; "
            f"{counts['encoder'] / 1e6:.2f}M | {counts['embedding_dim']} | {choice} | {minutes} | {final} |"
        )
    return "\n".join(lines) + "\n"
