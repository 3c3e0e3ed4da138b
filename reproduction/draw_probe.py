"""
Can the GLUE probe tell encoders apart at this scale? The `probe` campaign fine-tunes ("ft") and freezes ("fz")
one Masked ELMo pre-training run at several points of its training (probe.PROBE_POINTS), on the arena's GLUE
protocol and seeds. This draws GLUE (at each run's last epoch, as every GLUE verdict reads it) against the masked
perplexity of each point, and decides by the rule whether the probe ranks the final weights above the earliest
point, a perplexity several times higher. What it finds in each mode goes into its own column of the GLUE
comparisons in that mode (claims.py), beside their verdicts, which it never changes.
"""

import json
import statistics
from pathlib import Path

import matplotlib.pyplot as plt

from maelmo_plugin.arena.verdicts import CANNOT_TELL, verdict
from reproduction.draw_glue import AVERAGE, EPOCHS, glue_scores
from reproduction.draw_glue import LAST as LAST_EPOCH
from reproduction.lm_runs import SEEDS
from reproduction.stats import mean_sd

POINTS = ("untrained", "update100", "update500", "final")  # in training order
MODES = {"ft": "fine-tuned", "fz": "frozen, scalar mix"}
EARLIEST, LAST = "update100", "final"  # the probe must tell these apart
NO_PAPER = "a check of the probe, not a claim of the paper's"
BLIND = "the probe cannot rank encoders at this scale"  # what a GLUE row's probe column says in a mode it cannot rank


def perplexities(results: Path) -> dict:
    """{point: validation masked perplexity} of the probe's pre-training run at each of its points."""
    run = results / "probe_encoder" / "masked_elmo-seed1"
    found = {}
    if (run / "validation_curve.json").exists():
        found[LAST] = json.loads((run / "validation_curve.json").read_text())[-1]["perplexity"]
    for path in run.glob("snapshot_update*_metrics.json"):
        found[path.name.removeprefix("snapshot_").removesuffix("_metrics.json")] = json.loads(
            path.read_text()
        )["perplexity"]
    return found


def probe_scores(results: Path, epoch: str = LAST_EPOCH) -> dict:
    """{(point, mode): {seed: mean of RTE, CoLA, SST-2 dev x 100}} at `epoch`; the untrained architecture
    fine-tuned is arena_glue's random encoder (the same runs)."""
    scores = glue_scores(results / "probe", epoch)  # the "encoder" of a probe run's name is <point>-<mode>
    found = {
        tuple(encoder.split("-")): seeds for (encoder, task), seeds in scores.items() if task == "average"
    }
    untrained = glue_scores(results / "arena_glue", epoch).get(("random", "average"), {})
    if found and untrained:  # nothing to show before the probe's own runs
        found["untrained", "ft"] = untrained
    return found


def probe_differences(results: Path, epoch: str = LAST_EPOCH) -> dict:
    """{mode: [final − update100 per GLUE seed]}, paired by seed, for the modes with 2 seeds or more."""
    scores = probe_scores(results, epoch)
    found = {}
    for mode in MODES:
        last, earliest = scores.get((LAST, mode), {}), scores.get((EARLIEST, mode), {})
        seeds = sorted(set(last) & set(earliest))
        if len(seeds) >= 2:
            found[mode] = [last[seed] - earliest[seed] for seed in seeds]
    return found


def probe_verdicts(results: Path, epoch: str = LAST_EPOCH) -> dict:
    """{mode: the rule's verdict on final − update100}, for the modes with all of the protocol's GLUE seeds.
    Fewer decide nothing: 2 seeds' interval (t = 12.7 standard errors) would call the probe blind in its mode for
    want of seeds rather than of sensitivity."""
    return {
        mode: verdict(differences, 1, None, NO_PAPER)
        for mode, differences in probe_differences(results, epoch).items()
        if len(differences) == len(SEEDS)
    }


def probe_detects(results: Path, epoch: str = LAST_EPOCH) -> dict:
    """{mode: what the probe can detect in that mode}, for a GLUE row's own column (claims.verdict_rows): the
    probe's final − update100 by the rule, and the smallest effect its seeds would detect at 80% power. It never
    changes a row's verdict: a row's two words are the rule's on its own interval."""
    ppl = perplexities(results)
    found = {}
    for mode, result in probe_verdicts(results, epoch).items():
        weights = f"weights at {ppl.get(LAST, 0):.0f} and {ppl.get(EARLIEST, 0):.0f} masked perplexity"
        found[mode] = {
            "mode": MODES[mode],
            "direction": result.direction,
            "interval": result.interval(),
            "detectable": round(result.detectable, 3),
            "text": (
                f"{MODES[mode]}, one Masked ELMo run's {weights} score {result.interval()} apart "
                f"({result.direction}"
                + (f": {BLIND}" if result.direction == CANNOT_TELL else "")
                + f"); its {result.pairs} GLUE seeds detect {result.detectable:.1f} at 80% power"
            ),
        }
    return found


def probe_rows(results: Path, epoch: str = LAST_EPOCH) -> list:
    """verdicts.json's rows for the probe: final − update100 in each mode it decided, by the rule."""
    ppl = perplexities(results)
    return [
        {
            "claim": "probe",
            "comparison": f"{LAST} − {EARLIEST} ({ppl.get(LAST, 0):.0f} and {ppl.get(EARLIEST, 0):.0f} masked "
            f"perplexity), {MODES[mode]}, {AVERAGE} dev (x 100)",
            "paper": "–",
            "pairs": result.pairs,
            "gate": None,
            **result.as_dict(),
            "verdict": result.words,
        }
        for mode, result in probe_verdicts(results, epoch).items()
    ]


def probe_table(results: Path, epoch: str = LAST_EPOCH) -> str:
    scores, ppl = probe_scores(results, epoch), perplexities(results)
    if not scores:
        return ""
    lines = [
        f"### Can the GLUE probe tell? One Masked ELMo run at several perplexities (probe), at {EPOCHS[epoch]}",
        "",
        f"| point of the run | validation masked perplexity | {AVERAGE}, ft | {AVERAGE}, fz |",
        "|---|---|---|---|",
    ]
    for point in POINTS:
        perplexity = f"{ppl[point]:.1f}" if point in ppl else ("untrained" if point == "untrained" else "–")
        cells = [mean_sd(list(scores.get((point, mode), {}).values())) for mode in MODES]
        lines.append(f"| {point} | {perplexity} | " + " | ".join(cells) + " |")
    for mode, differences in probe_differences(results, epoch).items():
        result = verdict(differences, 1, None, NO_PAPER)
        if len(differences) == len(SEEDS):
            decided = f"({result.pairs} GLUE seeds), {result.direction} (detectable: {result.detectable:.1f})"
        else:
            decided = (
                f"({result.pairs} of {len(SEEDS)} GLUE seeds; the probe's verdict waits for all {len(SEEDS)})"
            )
        lines += ["", f"{LAST} − {EARLIEST}, {MODES[mode]}: {result.interval()} {decided}"]
    return "\n".join(lines) + "\n"


def draw_probe(results: Path, figures: Path) -> None:
    """figures/probe.png: the GLUE mean at the last epoch (each seed a dot, the mean a line) against the masked
    perplexity."""
    scores, ppl = probe_scores(results), perplexities(results)
    if not scores:
        return
    untrained_at = 1.5 * max(ppl.values(), default=100.0)  # drawn right of every trained point
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for mode, marker in (("ft", "o"), ("fz", "s")):
        points = [(ppl.get(point, untrained_at if point == "untrained" else None), point) for point in POINTS]
        line = [
            (x, statistics.mean(scores[point, mode].values()))
            for x, point in points
            if x and scores.get((point, mode))
        ]
        for x, point in points:
            if not x:
                continue
            for value in scores.get((point, mode), {}).values():
                axis.plot(x, value, marker, color="C0" if mode == "ft" else "C1", alpha=0.4)
        if line:
            axis.plot(
                *zip(*sorted(line)), "-" + marker, label=MODES[mode], color="C0" if mode == "ft" else "C1"
            )
    axis.set_xscale("log")
    axis.axvline(untrained_at, color="grey", linestyle=":", linewidth=1)
    axis.set_xlabel("validation masked perplexity of the weights (log; dotted line: untrained)")
    axis.set_ylabel(f"GLUE dev, {AVERAGE} (x 100)")
    axis.set_title("One Masked ELMo run probed at several points of its training", fontsize=10)
    axis.legend()
    figure.tight_layout()
    figures.mkdir(parents=True, exist_ok=True)
    figure.savefig(figures / "probe.png", dpi=110)
    plt.close(figure)
