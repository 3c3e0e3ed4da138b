"""
An arena from its plan to its table, resumably (`maelmo maelmo-arena`): the arms' parameters counted and compared,
each arm's learning rate chosen from its sweep by the rule (`rates.py`) and written beside the sweep
(`tuning.json`), the seeds pre-trained at that rate, each seed fine-tuned (and frozen) on the GLUE tasks beside its
untrained architecture, and the table (`table.py`). Every step reads what the steps before it kept in the arena's
folder, so running the same command again goes on where a stop left it.
"""

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any, Optional, Union

from allennlp.common import Params

from maelmo_declarations.refusals import Refusal
from maelmo_plugin.arena.parameters import built, counted, spread
from maelmo_plugin.arena.plan import Plan
from maelmo_plugin.arena.rates import lowest_tied_rate
from maelmo_plugin.arena.runs import (
    FineTuning,
    Pretraining,
    fine_tunings,
    glue_config,
    glue_environment,
    glue_inputs,
    pretraining_config,
    read_metric,
    seeded,
    sweep,
    write_whole,
)
from maelmo_plugin.arena.unigram_floor import LEARNED, unigram_floor
from maelmo_plugin.arena.worker import Worker, taken, waited

PLAN, PARAMETERS, TUNING = "plan.json", "parameters.json", "tuning.json"

Run = Union[Pretraining, FineTuning]


def record_plan(plan: Plan, arena: Path, source: str) -> None:
    """Keeps the plan in the arena's folder. The plan of a folder may grow or shrink in its rates, seeds, tasks and
    modes, which name the runs (a wider sweep, as the edge warning asks, reuses every run already made); a folder
    started with other arms, corpus, budget or protocol is refused (its runs are another arena's)."""
    path = arena / PLAN
    if path.is_file():
        before = fixed(json.loads(path.read_text()))
        now = fixed(plan.as_dict())
        differ = sorted(key for key in set(before) | set(now) if before.get(key) != now.get(key))
        if differ:
            raise Refusal(
                f"{arena} holds an arena started from another plan than {source}'s (its {', '.join(differ)} "
                f"differ): give a new folder (-s), or run the arena file it was started with ({path} holds its "
                "plan). Rates, seeds, tasks and modes may change in the same folder."
            )
    arena.mkdir(parents=True, exist_ok=True)
    write_whole(path, json.dumps(plan.as_dict(), indent=1) + "\n")


def fixed(plan: dict) -> dict:
    """What a plan's runs are made of besides their names: each arm without its rates, the corpus, the budget (and
    the sweeps' own), the tolerance, and GLUE's folder and protocol without its tasks and modes."""
    flat: dict[str, Any] = {
        f"arms.{arm['name']}": {k: v for k, v in arm.items() if k != "rates"} for arm in plan["arms"]
    }
    flat.update({key: plan.get(key) for key in ("corpus", "epochs", "parameter_tolerance", "tuning")})
    glue = plan.get("glue") or {}
    flat["glue"] = {k: v for k, v in glue.items() if k not in ("tasks", "modes")}
    return flat


def parameter_report(plan: Plan, arena: Path, allow_mismatch: bool, say: Callable[[str], None]) -> dict:
    """Each arm's parameters (all of them, the tied embedding too, and its encoder's), written to
    parameters.json; arms whose counts part by more than the plan's tolerance are refused without
    `allow_mismatch`."""
    counts: dict[str, dict] = {}
    for arm in plan.arms:
        config = write_config(arena, Pretraining(arm.name, arm.rates[0], plan.seeds[0]), plan, -1)
        params = Params.from_file(str(config))
        if params.get("train_data_path") != plan.corpus["train"]:
            raise Refusal(
                f"arms.{arm.name}.config ({arm.config}) does not pre-train on the arena's corpus: build it on "
                "training_config/lm/pretrain_common.libsonnet, whose data:: the arena sets."
            )
        counts[arm.name] = counted(built(params))
    parts = {kind: spread([count[kind] for count in counts.values()]) for kind in ("total", "encoder")}
    report = {"arms": counts, "spread": parts, "tolerance": plan.parameter_tolerance}
    lines = [
        f"  {name}: {count['total']:,} parameters, {count['encoder']:,} in the encoder"
        for name, count in counts.items()
    ]
    say("maelmo-arena: the arms' parameters\n" + "\n".join(lines))
    beyond = {kind: part for kind, part in parts.items() if part > plan.parameter_tolerance}
    report["mismatch"] = bool(beyond)
    if beyond and not allow_mismatch:
        parted = ", ".join(f"{kind} by {part:.1%}" for kind, part in beyond.items())
        raise Refusal(
            f"the arms' parameter counts part beyond the arena file's parameter_tolerance "
            f"({plan.parameter_tolerance:.0%}): {parted}. Match their sizes, raise parameter_tolerance, or give "
            "--allow-parameter-mismatch to compare them anyway (the table then says so)."
        )
    write_whole(arena / PARAMETERS, json.dumps(report, indent=1) + "\n")
    return report


def write_config(arena: Path, run: Run, plan: Plan, cuda_device: int) -> Path:
    kind = "pretrain" if isinstance(run, Pretraining) else "glue"
    path = arena / "configs" / kind / f"{run.name}.jsonnet"
    text = (
        pretraining_config(plan, run, cuda_device)
        if isinstance(run, Pretraining)
        else glue_config(plan, run, cuda_device)
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text() != text:
        write_whole(path, text)
    return path


def done(arena: Path, run: Run) -> bool:
    folder = run.folder(arena)
    return (folder / "metrics.json").is_file() and (folder / "model.tar.gz").is_file()


def train_all(
    plan: Plan, arena: Path, runs: Sequence[Run], worker: Worker, say: Callable[[str], None]
) -> None:
    """Every run of `runs` finished: first those no other worker holds, then, waiting for its worker, each that
    another holds (taken over where that worker died)."""
    for run in runs:
        if done(arena, run):
            continue
        with taken(lock(arena, run)) as held:
            if held and not done(arena, run):
                train_one(plan, arena, run, worker, say, held)
    for run in runs:
        if not done(arena, run):
            with waited(lock(arena, run)) as held:
                if not done(arena, run):
                    train_one(plan, arena, run, worker, say, held)


def lock(arena: Path, run: Run) -> Path:
    return arena / "locks" / f"{run.name}.lock"


def train_one(
    plan: Plan, arena: Path, run: Run, worker: Worker, say: Callable[[str], None], held: IO
) -> None:
    config = write_config(arena, run, plan, worker.cuda_device)
    log = arena / "logs" / f"{run.name}.log"
    say(f"maelmo-arena: training {run.name} (log: {log})")
    variables = None
    if isinstance(run, FineTuning):
        variables = glue_environment(plan, run.source.folder(arena) / "model.tar.gz")
    worker.train(config, run.folder(arena), log, variables, held)


def choose_rates(plan: Plan, arena: Path, say: Callable[[str], None]) -> dict[str, float]:
    """Each arm's rate by the rule, from its finished sweep, written to tuning.json with the sweep and the floor."""
    floor = corpus_floor(plan)
    record: dict = {"rule": "the lowest rate within 1% of the lowest final validation perplexity", "arms": {}}
    record["unigram_floor"] = floor
    record["budget"] = asdict(plan.sweep_budget)
    rates = {}
    for arm in plan.arms:
        runs = sweep(plan, arm.name)
        finals = [(run.rate, read_metric(run.folder(arena), "validation_perplexity")) for run in runs]
        measured = [(rate, final) for rate, final in finals if final is not None]
        if len(measured) != len(finals):
            raise RuntimeError(f"the sweep of {arm.name} has not finished: {arena} lacks some of its runs")
        choice = lowest_tied_rate(measured, rate=lambda pair: pair[0], final=lambda pair: pair[1])
        assert choice is not None
        rate, perplexity = choice
        rates[arm.name] = rate
        edge = "lowest" if rate == arm.rates[0] and len(arm.rates) > 1 else None
        edge = "highest" if rate == arm.rates[-1] and len(arm.rates) > 1 else edge
        record["arms"][arm.name] = {
            "sweep": [{"rate": rate, "perplexity": round(final, 3)} for rate, final in measured],
            "rate": rate,
            "perplexity": round(perplexity, 3),
            "at_the_grid_edge": edge,
            "learned": None if floor is None else perplexity < LEARNED * floor,
        }
        say(f"maelmo-arena: {arm.name} at {rate:g} (final validation perplexity {perplexity:.1f})")
        if edge:
            say(
                f"maelmo-arena: {arm.name}'s rate is the {edge} of its grid: widen arms.{arm.name}.rates past it"
            )
        if record["arms"][arm.name]["learned"] is False:
            say(
                f"maelmo-arena: {arm.name} has not learned on the sweeps' budget: {perplexity:.1f} is not "
                f"{1 - LEARNED:.0%} below the word-frequency floor ({floor:.1f}); its comparisons would measure its "
                f"recipe, not its architecture: try other rates (arms.{arm.name}.rates) or a longer budget"
            )
    write_whole(arena / TUNING, json.dumps(record, indent=1) + "\n")
    return rates


def corpus_floor(plan: Plan) -> Optional[float]:
    """The word-frequency floor of the sweeps' validation text, where their corpus is two text files (not a store or
    glob): the tuning budget's where the plan has one."""
    train, validation = plan.sweep_budget.train, plan.sweep_budget.validation
    if not (Path(train).is_file() and Path(validation).is_file()):
        return None
    return round(unigram_floor(train, validation, plan.corpus["vocab"]), 3)


def run_arena(
    plan: Plan,
    arena: Path,
    worker: Worker,
    source: str,
    allow_mismatch: bool = False,
    say: Callable[[str], None] = print,
) -> dict[str, float]:
    """Every step of the arena, each skipped where it has finished; returns the arms' chosen rates."""
    if plan.glue is not None:  # its runs come last, after every pre-training: their files are checked first
        for task, files in glue_inputs(plan).items():
            missing = next((path for path in files if not os.path.isfile(path)), None)
            if missing:
                raise Refusal(
                    f"{source}: glue.tasks {task} reads {missing}, which does not exist: give glue.directory the "
                    f"folder that holds GLUE's task folders (as download_glue_data.py writes them), or leave "
                    f"{task} out"
                )
    record_plan(plan, arena, source)
    with taken(arena / "locks" / "parameters.lock") as mine:
        if mine or not (arena / PARAMETERS).is_file():
            parameter_report(plan, arena, allow_mismatch, say)
    train_all(plan, arena, sweep(plan), worker, say)
    rates = choose_rates(plan, arena, say)
    train_all(plan, arena, seeded(plan, rates), worker, say)
    train_all(plan, arena, fine_tunings(plan, rates), worker, say)
    return rates
