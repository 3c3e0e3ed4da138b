"""
The GLUE tables and figure of docs/reproduction.md, for draw_report.py: each encoder's dev score per
task (mean and spread over its pre-training seeds) at each run's last epoch (LAST; the best, dev-chosen epoch's
beside it), the mean of RTE, CoLA and SST-2, and Masked ELMo's score minus each other encoder's, paired by seed.
"""

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Optional

import matplotlib.pyplot as plt

from reproduction.arena import TUNING_RECIPE_BERT
from reproduction.fine_tuning import SHARED_WITH_THE_PROBE, SHARED_WITH_THE_PROBE_AT_SEED_1, architecture
from reproduction.lm_runs import SEEDS
from reproduction.stats import mean_sd, paired

GLUE_TASKS = {"rte": "RTE (acc)", "cola": "CoLA (MCC)", "sst2": "SST-2 (acc)", "wnli": "WNLI (acc)"}
GLUE_ENCODERS = {
    "masked_elmo": "Masked ELMo",
    "elmo": "ELMo",
    "bert": "BERT*",
    "random": "random encoder",
    "random_elmo": "the ELMo biLM's architecture, untrained",
    "random_bert": "BERT*'s architecture, untrained",
    "masked_elmo-fz": "Masked ELMo, frozen",
    "elmo-fz": "ELMo, frozen",
    "bert-fz": "BERT*, frozen",
    "random-fz": "random encoder, frozen",
    "random_elmo-fz": "the ELMo biLM's architecture, untrained, frozen",
    "random_bert-fz": "BERT*'s architecture, untrained, frozen",
    "elmo_lr8e3": "ELMo biLM at 8e-3, the lowest-perplexity rate (record)",
    TUNING_RECIPE_BERT["name"]: "BERT* at the tuning campaign's recipe (record)",
    f"{TUNING_RECIPE_BERT['name']}-fz": "BERT* at the tuning campaign's recipe (record), frozen",
    f"random_{TUNING_RECIPE_BERT['name']}": "the BERT* record's architecture (post-LN), untrained",
    f"random_{TUNING_RECIPE_BERT['name']}-fz": "the BERT* record's architecture (post-LN), untrained, frozen",
    "elmo_stateful": "ELMo from carried states (superseded)",
}
ALWAYS_SHOWN = ("masked_elmo", "elmo", "bert", "random")  # the rest where they ran


def shown(scores: dict) -> dict:
    """GLUE_ENCODERS that have a score here, and the four of every campaign."""
    return {
        encoder: label
        for encoder, label in GLUE_ENCODERS.items()
        if encoder in ALWAYS_SHOWN or any(scores.get((encoder, task)) for task in GLUE_TASKS)
    }


# The paper's averages leave WNLI out ("the majority voting for all methods performs better"); so does ours.
GLUE_AVERAGED = ("rte", "cola", "sst2")
AVERAGE = "mean of RTE, CoLA, SST-2"


# Which epoch's weights a GLUE run is scored at. "last": the last epoch's, chosen by nothing, as the
# most-frequent-label floor is (metrics.json's validation_glue_score: the GLUE configs validate on dev). "best": the
# epoch of the best dev score, which AllenNLP archives (dev_metrics.json): chosen on the dev set it then reports, so
# biased upward; the report shows it beside the last epoch's, never in its place.
LAST, BEST = "last", "best"
EPOCHS = {LAST: "the last epoch", BEST: "the best (dev-chosen) epoch"}


def run_score(run: Path, epoch: str = LAST) -> Optional[float]:
    """A GLUE run's dev score x 100 at `epoch`; None where the run lacks it (see best_epoch_only)."""
    if epoch == LAST:
        metrics = run / "metrics.json"
        last = json.loads(metrics.read_text()).get("validation_glue_score") if metrics.exists() else None
        return None if last is None else 100 * last
    dev = run / "dev_metrics.json"
    return dev_score(dev) if dev.exists() else None


def dev_score(dev: Path) -> float:
    """A GLUE run's dev score x 100 at its best epoch, from its dev_metrics.json."""
    return 100 * json.loads(dev.read_text())["glue_score"]


def best_epoch_only(claim_dir: Path) -> list:
    """The runs of a GLUE campaign with no last-epoch score (no metrics.json, or no validation_glue_score in it):
    glue_scores reads them at their best epoch, and the report names them."""
    return sorted(
        path.parent.name
        for path in claim_dir.glob("*/dev_metrics.json")
        if run_score(path.parent, LAST) is None
    )


def glue_scores(claim_dir: Path, epoch: str = LAST) -> dict:
    """{(encoder, task): {seed: dev glue_score x 100}} and, for task "average", the mean of GLUE_AVERAGED's scores
    for each seed that has all of them, at `epoch` (LAST or BEST); a run without a last-epoch score is read at
    its best epoch (best_epoch_only names them)."""
    scores: defaultdict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for path in sorted(claim_dir.glob("*/dev_metrics.json")):
        encoder, task, seed = path.parent.name.rsplit("-", 2)
        score = run_score(path.parent, epoch)
        scores[encoder, task][seed] = dev_score(path) if score is None else score
    average_over_tasks(scores)
    return scores


def average_over_tasks(scores: dict) -> None:
    """scores[encoder, "average"]: {seed: mean of GLUE_AVERAGED}, for the seeds that have every task."""
    for encoder in {encoder for encoder, _ in list(scores)}:
        seeds = set.intersection(*(set(scores.get((encoder, task), {})) for task in GLUE_AVERAGED))
        if seeds:
            scores[encoder, "average"] = {
                seed: statistics.mean(scores[encoder, task][seed] for task in GLUE_AVERAGED)
                for seed in sorted(seeds)
            }


def claim_glue_scores(results: Path, claim: str, epoch: str = LAST) -> dict:
    """A GLUE campaign's scores (glue_scores); arena_glue's with the runs it shares with the probe, under its names
    (SHARED_WITH_THE_PROBE at every seed, fine_tuning.SHARED_WITH_THE_PROBE_AT_SEED_1 at GLUE seed 1)."""
    scores = glue_scores(results / claim, epoch)
    if claim == "arena_glue":
        probe = glue_scores(results / "probe", epoch)
        for (encoder, task), seeds in probe.items():
            if encoder in SHARED_WITH_THE_PROBE:
                scores[SHARED_WITH_THE_PROBE[encoder], task] = seeds
            if (
                encoder in SHARED_WITH_THE_PROBE_AT_SEED_1
                and task != "average"
                and f"seed{SEEDS[0]}" in seeds
            ):
                arena = scores.setdefault((SHARED_WITH_THE_PROBE_AT_SEED_1[encoder], task), {})
                arena[f"seed{SEEDS[0]}"] = seeds[f"seed{SEEDS[0]}"]
        average_over_tasks(scores)
    return scores


def scores_table(scores: dict, columns: dict) -> list:
    lines = ["| encoder | " + " | ".join(columns.values()) + " |", "|---|" + "---|" * len(columns)]
    for encoder, label in shown(scores).items():
        cells = [mean_sd(list(scores.get((encoder, task), {}).values())) for task in columns]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def other_epoch_table(scores: dict, epoch: str = BEST) -> str:
    """Each encoder's dev score at `epoch` (by default the best, dev-chosen one), beside the tables above."""
    columns = {**GLUE_TASKS, "average": AVERAGE}
    intro = (
        f"The same runs at {EPOCHS[epoch]} (the tables above, and every verdict, read {EPOCHS[LAST]}: the best "
        "epoch is chosen on the dev set it reports, so it is biased upward; the most-frequent-label floor has no "
        "such choice):"
    )
    return "\n".join(["", intro, "", *scores_table(scores, columns)]) + "\n"


def glue_table(scores: dict, majority: dict, title: str) -> str:
    columns = {**GLUE_TASKS, "average": AVERAGE}
    lines = [f"### {title}", "", *scores_table(scores, columns)]
    encoders = shown(scores)
    if majority:
        floor = [majority.get(task, "–") for task in GLUE_TASKS]
        average = (
            f"{statistics.mean(float(majority[task]) for task in GLUE_AVERAGED):.1f}"
            if all(task in majority for task in GLUE_AVERAGED)
            else "–"
        )
        lines.append("| most frequent dev label (no model) | " + " | ".join(floor + [average]) + " |")
    # A seed fixes the task head's initialisation and the order of the training data for every encoder, and
    # moves a score by more than the encoders differ on the small tasks: pairing by seed cancels that part.
    paired_columns = {task: columns[task] for task in (*GLUE_AVERAGED, "average")}
    lines += [
        "",
        "Masked ELMo's dev score minus each other encoder's, paired by seed (mean difference ± its "
        "standard error over the seeds both have; about 2 standard errors or less is within the noise):",
        "",
        "| Masked ELMo − | " + " | ".join(paired_columns.values()) + " |",
        "|---|" + "---|" * len(paired_columns),
    ]
    for encoder, label in list(encoders.items())[1:]:
        cells = []
        for task in paired_columns:
            pairs = paired(scores.get(("masked_elmo", task), {}), scores.get((encoder, task), {}))
            cells.append(f"{pairs[0]} ({pairs[1]} pairs)" if pairs else "–")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def draw_glue(scores: dict, majority: dict, figures: Path, claim: str, title: str) -> None:
    """Writes figures/<claim>.png: a bar per encoder and task (`scores`: the last epoch's), its seeds as dots, the
    majority floor dashed. An encoder frozen has its architecture's colour, hatched."""
    figure, axis = plt.subplots(figsize=(10, 5.5))
    encoders = shown(scores)
    width = 0.8 / len(encoders)
    for position, task in enumerate(GLUE_TASKS):  # the floor a model has to beat, across its task's bars
        if task in majority:
            axis.hlines(
                float(majority[task]),
                position - 0.45,
                position + 0.45,
                colors="k",
                linestyles="--",
                linewidth=1,
                label="most frequent dev label" if position == 0 else "",  # "": hlines' default, no entry
                zorder=3,
            )
    architectures = list(dict.fromkeys(architecture(encoder) for encoder in encoders))
    for index, (encoder, label) in enumerate(encoders.items()):
        labelled = False  # one legend entry per encoder, from whichever task it has results on first
        for position, task in enumerate(GLUE_TASKS):
            values = list(scores.get((encoder, task), {}).values())
            if values:
                x = position + (index - (len(encoders) - 1) / 2) * width
                spread = statistics.stdev(values) if len(values) > 1 else 0.0
                axis.bar(
                    x,
                    statistics.mean(values),
                    width,
                    yerr=spread,
                    capsize=3,
                    color=f"C{architectures.index(architecture(encoder)) % 10}",
                    hatch="//" if encoder.endswith("-fz") else None,
                    edgecolor="white",
                    label=None if labelled else label,
                )
                labelled = True
                axis.plot([x] * len(values), values, "k.", markersize=3)
    axis.set_xticks(range(len(GLUE_TASKS)), list(GLUE_TASKS.values()))
    axis.set_ylabel("dev score x 100 at the last epoch (bars: mean over seeds; dots: seeds)")
    axis.set_title(title)
    axis.set_ylim(0, 100)
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=3, fontsize="small")
    axis.grid(True, axis="y", alpha=0.3)
    figure.tight_layout()
    figures.mkdir(parents=True, exist_ok=True)
    figure.savefig(figures / f"{claim}.png", dpi=110, bbox_inches="tight")
    plt.close(figure)
