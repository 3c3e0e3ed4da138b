"""
The arena's table, from the runs it kept: each arm's parameters, chosen rate and scores, and each pair of arms
compared by the verdict rule (`verdicts.py`), paired by seed: on the final validation perplexity where both arms
are the same kind of language model (a masked LM's perplexity and a next-word biLM's measure different things), and
on the mean GLUE dev score of the tasks in each mode. A GLUE comparison gives a verdict only when each arm beats its
own untrained architecture on that mean by the same rule (its gate), as in the reproduction's report. The verdict
names the better arm, or says the seeds cannot tell them apart, with the smallest difference they would detect.
"""

import json
import statistics
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Optional

from maelmo_plugin.arena.plan import Plan
from maelmo_plugin.arena.runs import FineTuning, Pretraining, read_metric, write_whole
from maelmo_plugin.arena.unigram_floor import LEARNED
from maelmo_plugin.arena.verdicts import CANNOT_TELL, FAILS, NOT_RUN, SUPPORTS, TOO_FEW, gate, verdict

VERDICTS_JSON, VERDICTS_MD = "verdicts.json", "verdicts.md"
PERPLEXITY = "final validation perplexity"


def perplexities(plan: Plan, arena: Path, rates: dict[str, float]) -> dict[str, dict[str, float]]:
    """{arm: {seed: final validation perplexity}} of the finished seeds."""
    scores: dict[str, dict[str, float]] = {}
    for arm in plan.arms:
        for seed in plan.seeds:
            value = read_metric(
                Pretraining(arm.name, rates[arm.name], seed).folder(arena), "validation_perplexity"
            )
            if value is not None:
                scores.setdefault(arm.name, {})[str(seed)] = value
    return scores


def glue_means(plan: Plan, arena: Path, rates: dict[str, float]) -> dict[tuple[str, str], dict[str, float]]:
    """{(encoder, mode): {seed: mean dev score of the tasks, x 100}} where every task of the seed has finished;
    `encoder` is an arm or its untrained architecture (`untrained_<arm>`)."""
    means: dict[tuple[str, str], dict[str, float]] = {}
    if plan.glue is None:
        return means
    for arm in plan.arms:
        for mode in plan.glue.modes:
            for untrained in (False, True):
                for seed in plan.seeds:
                    runs = [
                        FineTuning(arm.name, rates[arm.name], seed, task, mode, untrained)
                        for task in plan.glue.tasks
                    ]
                    read = [read_metric(run.folder(arena), "validation_glue_score") for run in runs]
                    scores = [score for score in read if score is not None]
                    if len(scores) == len(runs):
                        key = (runs[0].encoder, mode)
                        means.setdefault(key, {})[str(seed)] = 100 * statistics.mean(scores)
    return means


def comparison(
    what: str, first: str, second: str, a: dict, b: dict, side: int, gates: Optional[dict]
) -> dict:
    """`first` − `second` on `what`, paired by seed, by the rule; `side` +1 where higher is better."""
    seeds = sorted(set(a) & set(b), key=int)
    row: dict = {"comparison": f"{first} − {second}", "what": what, "pairs": len(seeds)}
    if gates is not None:
        row["gates"] = {name: result.as_dict() for name, result in gates.items()}
    if len(seeds) < 2:
        return {**row, "verdict": TOO_FEW}
    result = verdict(
        [a[seed] - b[seed] for seed in seeds], side, None, "the arena compares arms, not a paper"
    )
    row.update(
        mean=round(result.mean, 3),
        interval=[round(result.low, 3), round(result.high, 3)],
        detectable=round(result.detectable, 3),
    )
    words = {SUPPORTS: f"{first} better", CANNOT_TELL: "cannot tell"}.get(
        result.direction, f"{second} better"
    )
    failed = [name for name, result in (gates or {}).items() if result.result == FAILS]
    waiting = [name for name, result in (gates or {}).items() if result.result == NOT_RUN]
    if failed:
        one = len(failed) == 1
        words = (
            f"no verdict: {', '.join(failed)} {'does' if one else 'do'} not beat "
            f"{'its' if one else 'their'} untrained architecture"
        )
    elif waiting:
        words = f"no verdict until the gate of {', '.join(waiting)} has run"
    return {**row, "verdict": words}


def arena_table(plan: Plan, arena: Path, rates: dict[str, float]) -> dict:
    parameters = json.loads((arena / "parameters.json").read_text())
    tuning = json.loads((arena / "tuning.json").read_text())
    perplexity = perplexities(plan, arena, rates)
    glue = glue_means(plan, arena, rates)
    modes: Sequence[str] = plan.glue.modes if plan.glue else ()
    arms = []
    for arm in plan.arms:
        entry = {
            "arm": arm.name,
            "parameters": parameters["arms"][arm.name]["total"],
            "encoder_parameters": parameters["arms"][arm.name]["encoder"],
            "rate": rates[arm.name],
            "learned": tuning["arms"][arm.name]["learned"],
            "perplexity": _mean(perplexity.get(arm.name, {})),
        }
        for mode in modes:
            entry[f"glue_{mode}"] = _mean(glue.get((arm.name, mode), {}))
            entry[f"untrained_glue_{mode}"] = _mean(glue.get((f"untrained_{arm.name}", mode), {}))
        arms.append(entry)
    rows = []
    for first, second in combinations([arm.name for arm in plan.arms], 2):
        models = {parameters["arms"][name]["model"] for name in (first, second)}
        if len(models) == 1:
            rows.append(
                comparison(
                    PERPLEXITY, first, second, perplexity.get(first, {}), perplexity.get(second, {}), -1, None
                )
            )
        for mode in modes:
            gates = {
                name: gate(glue.get((name, mode), {}), glue.get((f"untrained_{name}", mode), {}))
                for name in (first, second)
            }
            what = f"GLUE {mode}, mean dev score of {', '.join(plan.glue.tasks) if plan.glue else ''} (x 100)"
            rows.append(
                comparison(
                    what, first, second, glue.get((first, mode), {}), glue.get((second, mode), {}), 1, gates
                )
            )
    table = {
        "arms": arms,
        "comparisons": rows,
        "parameter_mismatch": parameters["mismatch"],
        "unigram_floor": tuning["unigram_floor"],
    }
    if plan.tuning is not None:  # the floor, and `learned`, are the sweeps': on the tuning budget's text
        table["unigram_floor_of"] = "the tuning budget's validation text, which the sweeps read"
    return table


def _mean(scores: dict[str, float]) -> Optional[float]:
    return round(statistics.mean(scores.values()), 3) if scores else None


RULE = (
    "Each comparison is the first arm minus the second, paired by seed: mean [95% interval, Student's t], by the "
    "rule of maelmo_plugin/arena/verdicts.py. The verdict names the better arm when the interval excludes zero, "
    "else *cannot tell*; *detectable* is the smallest difference these seeds would find 80% of the time. A GLUE "
    "comparison counts only when each arm beats its untrained architecture (the same head, fine-tuning and seeds) "
    "on the mean of the tasks by the same rule."
)


def markdown(table: dict) -> str:
    modes = [key.removeprefix("glue_") for key in table["arms"][0] if key.startswith("glue_")]
    header = ["arm", "parameters", "learning rate", "perplexity"] + [
        f"GLUE {mode} (untrained)" for mode in modes
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for arm in table["arms"]:
        cells = [
            arm["arm"],
            f"{arm['parameters']:,}",
            f"{arm['rate']:g}"
            + ("" if arm["learned"] is not False else f" (not {1 - LEARNED:.0%} below the floor)"),
            _number(arm["perplexity"]),
        ] + [f"{_number(arm[f'glue_{mode}'])} ({_number(arm[f'untrained_glue_{mode}'])})" for mode in modes]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        RULE,
        "",
        "| comparison | on | difference | verdict | detectable | gates |",
        "|---|---|---|---|---|---|",
    ]
    for row in table["comparisons"]:
        difference = "–"
        if "mean" in row:
            low, high = row["interval"]
            difference = f"{row['mean']:+.2f} [{low:+.2f}, {high:+.2f}] ({row['pairs']} seeds)"
        gates = "; ".join(
            f"{name} {result['result']}" + (f" {result['interval']}" if result["interval"] else "")
            for name, result in row.get("gates", {}).items()
        )
        detectable = f"{row['detectable']:.2f}" if "detectable" in row else "–"
        lines.append(
            f"| {row['comparison']} | {row['what']} | {difference} | **{row['verdict']}** | {detectable} | {gates or '–'} |"
        )
    if table["parameter_mismatch"]:
        lines += ["", "The arms' parameter counts part beyond the arena file's tolerance (parameters.json)."]
    if table["unigram_floor"] is not None:
        of = table.get("unigram_floor_of")
        said = f"The word-frequency floor of {of}" if of else "The validation text's word-frequency floor"
        lines += ["", f"{said}: perplexity {table['unigram_floor']:.1f}."]
    return "\n".join(lines) + "\n"


def _number(value: Optional[float]) -> str:
    return "–" if value is None else f"{value:.1f}"


def write_table(plan: Plan, arena: Path, rates: dict[str, float]) -> str:
    table = arena_table(plan, arena, rates)
    write_whole(arena / VERDICTS_JSON, json.dumps(table, indent=1, ensure_ascii=False) + "\n")
    text = markdown(table)
    write_whole(arena / VERDICTS_MD, text)
    return text
