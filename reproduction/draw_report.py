"""
Draws the figures and tables of docs/reproduction.md from the result files that reproduction.runner keeps
(reproduction/results/<claim>/<run>/), without running anything:

    .venv/bin/python -m reproduction.draw_report

writes docs/reproduction/figures/<claim>.png and docs/reproduction/summary.md (one table per claim: each
arm's final validation masked perplexity, mean and standard deviation over its seeds, and its speed), and the
verdicts as data beside the results (reproduction/results/verdicts.json).
A claim whose runs are not all there yet is drawn with what there is, and says so.
"""

import json
import re
import statistics
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

from reproduction import REPORT, RESULTS
from reproduction.arena import load_budget
from reproduction.claims import verdict_rows, verdict_table, with_best_epoch
from reproduction.compute import reach
from reproduction.draw_baselines import baselines_table, draw_tuning, tuning_table
from reproduction.draw_budget import budget_table, draw_budget
from reproduction.draw_elmo_transfer import transfer_table
from reproduction.draw_glue import (
    BEST,
    best_epoch_only,
    claim_glue_scores,
    draw_glue,
    glue_table,
    other_epoch_table,
)
from reproduction.draw_probe import draw_probe, probe_detects, probe_rows, probe_table
from reproduction.speed import speed_table
from reproduction.stats import mean_sd, paired, seed_of
from reproduction.tuning import load_tuning

TITLES = {
    "sequence_length": "Table 5: windows of 20 and 128 word-pieces, 640 word-pieces per update",
    "btbptt": "Table 6: BTBPTT and TBPTT, batch 20, windows of 20",
    "cell": "Section 2.2: the fused cell and ELMo's clipped cell",
    "mask_accumulation": "Section 3.1: k = 4 mask sets against k = 1",
    "compute": "Section 3.3: masked perplexity against compute",
    "glue": "Tables 2-3: GLUE dev scores after the same pre-training (reduced CPU protocol)",
    "arena_encoders": "Section 3.3, the fair arena: tuned, parameter-matched encoders, 3 seeds each",
    "arena_glue": "Tables 2-3, the fair arena: GLUE dev scores of the tuned, parameter-matched encoders",
    "arena_sequence_length": (
        "Table 5, the fair arena: windows of 20 and 128 at the paper's 2,560 word-pieces per update, all of "
        "WikiText-2, 5 seeds; masks drawn by stream position, so every column scores the same masked word-pieces"
    ),
}
# The arm whose final perplexity a claim's other arms are read against, in updates as well as time: what one
# of its updates is worth in theirs holds on any hardware, what it costs depends on the hardware.
REFERENCE_ARMS = {"mask_accumulation": "k4"}


def arm_of(run: str) -> str:
    return re.sub(r"-seed\d+$", "", run)


def load(claim_dir: Path) -> dict:
    """{arm: [run, ...]}, each run {name, curve, metrics, throughput}."""
    arms = defaultdict(list)
    for run_dir in sorted(path for path in claim_dir.iterdir() if path.is_dir()):
        files = {name: run_dir / f"{name}.json" for name in ("validation_curve", "metrics", "throughput")}
        run = {name: json.loads(path.read_text()) for name, path in files.items() if path.exists()}
        run["windows"] = {
            int(path.name[len("windows") : -len("_metrics.json")]): json.loads(path.read_text())
            for path in run_dir.glob("windows*_metrics.json")
        }
        stateful = run_dir / "stateful_metrics.json"  # read as it trained, states carried (runner.py)
        run["stateful"] = json.loads(stateful.read_text()) if stateful.exists() else None
        machine = run_dir / "machine.json"  # the CPU it ran on: CPU times compare only on the same one
        run["machine"] = json.loads(machine.read_text()) if machine.exists() else None
        if "validation_curve" in run:
            arms[arm_of(run_dir.name)].append({"name": run_dir.name, **run})
    return arms


def masked(arms: dict) -> dict:
    """The arms of masked LMs. The ELMo biLM's perplexity is of the next and previous word-piece, no point on a
    masked perplexity's axis: its runs are kept for the verdicts (its budget's time) and the baselines table."""
    return {
        arm: runs
        for arm, runs in arms.items()
        if not any("forward_perplexity" in run["validation_curve"][-1] for run in runs)
    }


def speed(run: dict) -> float:
    """Training word-pieces per CPU-second over the whole run (validation excluded). CPU time, not the wall
    clock: each run has one thread on one core, and the CPU time does not grow when something else shares it."""
    last = run["validation_curve"][-1]
    return last["wordpieces"] / max(last["cpu_seconds"], 1e-9)


def draw(claim: str, arms: dict, figures: Path) -> None:
    # Left and middle: whole runs (log scale); right: the second half of the updates on a linear scale, where
    # the arms' final differences, often a few points, can be read.
    figure, axes = plt.subplots(1, 3, figsize=(18, 4.8))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for colour, (arm, runs) in zip(colours, sorted(arms.items())):
        for index, run in enumerate(runs):
            curve = run["validation_curve"]
            label = f"{arm} ({len(runs)} seed{'s' if len(runs) > 1 else ''})" if index == 0 else None
            perplexity = [point["perplexity"] for point in curve]
            axes[0].plot(
                [point["updates"] for point in curve], perplexity, color=colour, label=label, alpha=0.8
            )
            axes[1].plot([point["cpu_seconds"] / 60 for point in curve], perplexity, color=colour, alpha=0.8)
            late = [point for point in curve if point["updates"] >= curve[-1]["updates"] / 2]
            axes[2].plot(
                [point["updates"] for point in late],
                [point["perplexity"] for point in late],
                color=colour,
                marker=".",
                alpha=0.8,
            )
    axes[0].set_xlabel("updates (optimizer steps)")
    axes[1].set_xlabel("training CPU time (minutes, one core; validation excluded)")
    axes[2].set_xlabel("updates, second half of training")
    for axis in axes[:2]:
        axis.set_ylabel("validation masked perplexity (per token, log scale)")
        axis.set_yscale("log")
        axis.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        axis.yaxis.set_minor_formatter(ticker.FormatStrFormatter("%g"))
        axis.grid(True, which="both", alpha=0.3)
    axes[2].set_ylabel("validation masked perplexity (per token, linear scale)")
    axes[2].grid(True, alpha=0.3)
    axes[0].legend()
    figure.suptitle(TITLES.get(claim, claim))
    figure.tight_layout()
    figures.mkdir(parents=True, exist_ok=True)
    figure.savefig(figures / f"{claim}.png", dpi=110)
    plt.close(figure)


def table(claim: str, arms: dict) -> str:
    lines = [
        f"### {TITLES.get(claim, claim)}",
        "",
        "| arm | final validation masked perplexity | updates | word-pieces per training CPU-second |",
        "|---|---|---|---|",
    ]
    for arm, runs in sorted(arms.items()):
        final = [run["validation_curve"][-1]["perplexity"] for run in runs]
        updates = sorted({run["validation_curve"][-1]["updates"] for run in runs})
        speeds = [speed(run) for run in runs]
        lines.append(
            f"| {arm} | {mean_sd(final)} | {', '.join(map(str, updates))} | {statistics.mean(speeds):,.0f} |"
        )
    lines += differences(arms)
    if any(run["windows"] for runs in arms.values() for run in runs):
        lines += ["", windows_table(arms)]
    if any(run["stateful"] for runs in arms.values() for run in runs):
        lines += ["", stateful_table(arms)]
    compute = claim in ("compute", "arena_encoders")
    if compute or claim in ("mask_accumulation", "cell"):  # claims about what an arm gets for its time
        lines += ["", equal_time(arms)]
    if compute and len(arms) > 1:
        lines += ["", time_to_reach(arms)]
    if REFERENCE_ARMS.get(claim) in arms and len(arms) > 1:
        lines += ["", to_reach_the_final_of(REFERENCE_ARMS[claim], arms)]
    return "\n".join(lines) + "\n"


def differences(arms: dict) -> list:
    """For each pair of arms with 2 seeds or more, the difference of their final perplexities' means ± its
    standard error, paired by seed and unpaired (Welch's, sqrt(s1^2/n1 + s2^2/n2)). The same seed starts
    both arms from the same weights (where they share an architecture) and masks, so the seed's own effect,
    often larger than the arms', cancels in the paired difference. A difference within about 2 standard
    errors is within the noise."""
    finals = {
        arm: {seed_of(run["name"]): run["validation_curve"][-1]["perplexity"] for run in runs}
        for arm, runs in sorted(arms.items())
    }
    seeded = [arm for arm, values in finals.items() if len(values) > 1]
    lines = []
    for index, first in enumerate(seeded):
        for second in seeded[index + 1 :]:
            a, b = list(finals[first].values()), list(finals[second].values())
            error = (statistics.variance(a) / len(a) + statistics.variance(b) / len(b)) ** 0.5
            unpaired = f"{statistics.mean(a) - statistics.mean(b):.1f} ± {error:.1f} unpaired"
            pairs = paired(finals[first], finals[second])
            paired_cell = f"{pairs[0]} paired by seed ({pairs[1]} pairs); " if pairs else ""
            lines.append(
                f"- {first} − {second}: {paired_cell}{unpaired} "
                "(final perplexity, difference ± standard error)"
            )
    return ["", *lines] if lines else []


def windows_table(arms: dict) -> str:
    """Each arm's validation masked perplexity on windows of each length (its archive's weights), and the
    first two arms' difference paired by seed."""
    lengths = sorted({length for runs in arms.values() for run in runs for length in run["windows"]})
    score = {
        length: {
            arm: {
                seed_of(run["name"]): run["windows"][length]["perplexity"]
                for run in runs
                if length in run["windows"]
            }
            for arm, runs in arms.items()
        }
        for length in lengths
    }
    lines = [
        "Scored on validation windows of each length (the archive's weights, every window from zero states):",
        "",
        "| arm | " + " | ".join(f"windows of {length}" for length in lengths) + " |",
        "|---|" + "---|" * len(lengths),
    ]
    for arm in sorted(arms):
        lines.append(
            f"| {arm} | "
            + " | ".join(mean_sd(list(score[length][arm].values())) for length in lengths)
            + " |"
        )
    if len(arms) == 2:
        first, second = sorted(arms)
        cells = [paired(score[length][first], score[length][second]) for length in lengths]
        lines.append(
            f"| {first} − {second}, paired by seed | " + " | ".join(c[0] if c else "–" for c in cells) + " |"
        )
    return "\n".join(lines)


def stateful_table(arms: dict) -> str:
    """Each seed's validation masked perplexity read as it trained (stateful rows, the states carried from
    window to window: reproduce.py's stateful_metrics.json), its mean, and the first two arms' difference by seed."""
    score = {
        arm: {seed_of(run["name"]): run["stateful"]["perplexity"] for run in runs if run["stateful"]}
        for arm, runs in sorted(arms.items())
    }
    seeds = sorted({seed for values in score.values() for seed in values}, key=int)
    lines = [
        "Read as trained (stateful rows, each window starting from the states its row reached on the one before):",
        "",
        "| arm | " + " | ".join(f"seed {seed}" for seed in seeds) + " | mean |",
        "|---|" + "---|" * (len(seeds) + 1),
    ]
    for arm, values in score.items():
        cells = [f"{values[seed]:.1f}" if seed in values else "–" for seed in seeds]
        lines.append(f"| {arm} | " + " | ".join(cells) + f" | {mean_sd(list(values.values()))} |")
    if len(score) == 2:
        first, second = score
        both = [seed for seed in seeds if seed in score[first] and seed in score[second]]
        cells = [f"{score[first][seed] - score[second][seed]:.1f}" if seed in both else "–" for seed in seeds]
        pairs = paired(score[first], score[second])
        lines.append(
            f"| {first} − {second}, paired by seed | "
            + " | ".join(cells)
            + (f" | {pairs[0]} ({pairs[1]} pairs) |" if pairs else " | – |")
        )
    return "\n".join(lines)


def known_reach(curve: list, target: float, key: str = "cpu_seconds") -> float:
    """compute.reach of a curve that comes down to `target` (its lowest perplexity is at or below it)."""
    value = reach(curve, target, key)
    if value is None:
        raise ValueError(f"a curve that never comes down to {target} has no time to reach it")
    return value


def time_to_reach(arms: dict) -> str:
    """Each arm's training CPU time to first reach the perplexity that every arm reached."""
    runs = [run for arm_runs in arms.values() for run in arm_runs]
    target = max(min(point["perplexity"] for point in run["validation_curve"]) for run in runs)
    cells = []
    for arm, runs in sorted(arms.items()):
        minutes = [known_reach(run["validation_curve"], target) / 60 for run in runs]
        # a curve below the target at its first validation reached it sometime before: an upper bound
        first = all(run["validation_curve"][0]["perplexity"] <= target for run in runs)
        cells.append(
            f"{arm} {'≤ ' if first else ''}{statistics.mean(minutes):.1f}{' (its first validation)' * first}"
        )
    return (
        f"Training CPU-minutes to reach a validation masked perplexity of {target:.1f}: "
        + ", ".join(cells)
        + "."
    )


def to_reach_the_final_of(reference: str, arms: dict) -> str:
    """The updates and CPU time each other arm takes to come down to `reference`'s mean final perplexity."""
    finals = [run["validation_curve"][-1] for run in arms[reference]]
    target = statistics.mean(point["perplexity"] for point in finals)
    updates = statistics.mean(point["updates"] for point in finals)
    minutes = statistics.mean(point["cpu_seconds"] for point in finals) / 60
    cells = []
    for arm, runs in sorted(arms.items()):
        if arm == reference:
            continue
        curves = [run["validation_curve"] for run in runs]
        reached = [curve for curve in curves if min(point["perplexity"] for point in curve) <= target]
        if len(reached) < len(runs):
            cells.append(f"{arm} does not ({len(reached)} of {len(runs)} runs)")
            continue
        arm_updates = statistics.mean(known_reach(curve, target, "updates") for curve in reached)
        arm_minutes = statistics.mean(known_reach(curve, target) for curve in reached) / 60
        cells.append(
            f"{arm} {arm_updates:,.0f} updates ({arm_updates / updates:.1f} times as many) and "
            f"{arm_minutes:.1f} CPU-minutes"
        )
    return (
        f"To reach {reference}'s final validation masked perplexity ({target:.1f}, after {updates:,.0f} updates "
        f"and {minutes:.1f} CPU-minutes): " + "; ".join(cells) + "."
    )


def equal_time(arms: dict) -> str:
    """Each arm's perplexity at the training time every run reached (interpolated on its curve); then at each
    later arm's end, among the arms whose runs all ran that long (an arm given more epochs to match a slower
    arm's time is compared with it there)."""
    ends = {
        arm: min(run["validation_curve"][-1]["cpu_seconds"] for run in runs) for arm, runs in arms.items()
    }
    lines = []
    for index, (last, budget) in enumerate(sorted(ends.items(), key=lambda item: item[1])):
        reached = [arm for arm in sorted(arms) if ends[arm] >= budget]
        if index > 0 and len(reached) < 2:
            continue
        cells = []
        for arm in reached:
            values = [interpolate(run["validation_curve"], budget) for run in arms[arm]]
            cells.append(f"{arm}: {mean_sd([v for v in values if v is not None])}")
        where = (
            f"At equal training time ({budget / 60:.1f} CPU-minutes, the shortest run's): "
            if index == 0
            else f"At {budget / 60:.1f} CPU-minutes ({last}'s end), the arms that ran that long: "
        )
        lines.append(where + "; ".join(cells) + ".")
    return "\n\n".join(lines)


def interpolate(curve: list, seconds: float):
    points = [(point["cpu_seconds"], point["perplexity"]) for point in curve]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x0 <= seconds <= x1:
            return y0 + (y1 - y0) * (seconds - x0) / max(x1 - x0, 1e-9)
    return points[-1][1] if points and abs(points[-1][0] - seconds) < 1e-6 else None


def main(results: Path = RESULTS, report: Path = REPORT) -> None:
    """Reads results/, writes results/verdicts.json, report/figures/<claim>.png and report/summary.md."""
    sections = [
        "# Reproduction tables",
        "",
        "Written by `python -m reproduction.draw_report` from `reproduction/results/`.",
        "",
    ]
    arms_by_claim, scores, best_scores = {}, {}, {}
    for claim_dir in sorted(path for path in results.iterdir() if path.is_dir()) if results.exists() else []:
        claim = claim_dir.name
        if claim in ("glue", "arena_glue"):
            claim_scores = claim_glue_scores(results, claim)  # at each run's last epoch
            if claim_scores:
                scores[claim] = claim_scores
                best_scores[claim] = claim_glue_scores(results, claim, BEST)
                # The most frequent dev label is the same for every campaign: any campaign's file will do.
                majority_file = next(
                    iter(sorted(results.glob("*/majority.json"))), claim_dir / "majority.json"
                )
                majority = json.loads(majority_file.read_text()) if majority_file.exists() else {}
                draw_glue(claim_scores, majority, report / "figures", claim, TITLES[claim])
                sections.append(glue_table(claim_scores, majority, TITLES[claim]))
                sections.append(other_epoch_table(best_scores[claim], BEST))
                flagged = [
                    run
                    for directory in {claim_dir, results / "probe"}
                    for run in best_epoch_only(directory)
                    if directory == claim_dir or claim == "arena_glue"
                ]
                if flagged:  # no last-epoch score kept: read at the best epoch, so biased upward
                    sections.append(
                        "Read at their best (dev-chosen) epoch, for want of a last-epoch score: "
                        + ", ".join(sorted(flagged))
                        + ".\n"
                    )
            continue
        if claim == "tuning":  # one curve per learning rate, ELMo's among them
            runs = load_tuning(claim_dir)
            if runs:
                draw_tuning(runs, report / "figures")
                sections.append(tuning_table(runs))
            continue
        if claim == "bert_budget":  # (e): BERT*'s recipes on the budget it runs, and the tie rule's choice
            budget_runs = load_budget(results)
            if budget_runs:
                draw_budget(budget_runs, report / "figures")
                sections.append(budget_table(budget_runs))
            continue
        if claim == "elmo_transfer":  # SST-2 fine-tunes that explain section 1's ELMo row
            sections.append(transfer_table(results))
            continue
        if claim in ("probe", "probe_encoder"):  # can the GLUE probe tell? (drawn once, below)
            continue
        if claim == "speed":  # short timed runs: a table of speeds, no curves worth drawing
            arms_by_claim[claim] = load(claim_dir)
            sections.append(speed_table(arms_by_claim[claim]))
            continue
        if claim == "arena_encoders":  # what each encoder is, then the compute claim on their curves
            sections.append(baselines_table(load_tuning(results / "tuning"), claim_dir))
        arms_by_claim[claim] = load(claim_dir)
        arms = masked(arms_by_claim[claim])
        if not arms:
            continue
        draw(claim, arms, report / "figures")
        sections.append(table(claim, arms))
        print(f"drew {claim}: {sum(len(runs) for runs in arms.values())} runs")
    probe = probe_table(results)
    if probe:
        draw_probe(results, report / "figures")
        sections += [probe, probe_table(results, BEST)]
    # GLUE at each run's last epoch; the best (dev-chosen) epoch's reading of the same rows for the record.
    rows = verdict_rows(arms_by_claim, scores, probe_detects(results)) + probe_rows(results)
    best_rows = verdict_rows({}, best_scores, probe_detects(results, BEST)) + probe_rows(results, BEST)
    rows = with_best_epoch(rows, best_rows)
    sections[4:4] = [verdict_table(rows)] if rows else []  # first: what the report and the README quote
    # The same rows for programs, and for the test that holds the README's and the report's quotes to them.
    results.mkdir(parents=True, exist_ok=True)
    (results / "verdicts.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
    (report / "summary.md").write_text("\n".join(sections))


if __name__ == "__main__":
    main()
