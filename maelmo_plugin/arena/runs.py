"""
The runs of an arena, named and configured from its plan alone: each arm's sweep (one pre-training run per rate, at
the first seed, on the tuning budget where the plan has one), its seeds at the chosen rate (without a tuning budget,
the first seed's is the sweep's run at that rate, not run twice), and
for each seed and GLUE task its pre-trained weights and its untrained architecture (the same archive, drawn afresh
from the GLUE seed: glue.libsonnet's random-*), fine-tuned or frozen. Each run is a Jsonnet file beside its folder
that imports the arm's or the task's config and says what it changes, so that the file says what ran.
"""

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import _jsonnet

from maelmo_declarations.packaged_configs import packaged_config
from maelmo_plugin.arena.plan import Plan


@dataclass(frozen=True)
class Pretraining:
    arm: str
    rate: float
    seed: int
    tuning: bool = False  # a sweep's run on the plan's tuning budget, not the seeds'

    @property
    def name(self) -> str:
        return f"{self.arm}-lr{self.rate:g}-seed{self.seed}{'-tuning' if self.tuning else ''}"

    def folder(self, arena: Path) -> Path:
        return arena / "pretrain" / self.name


@dataclass(frozen=True)
class FineTuning:
    arm: str
    rate: float  # the arm's chosen rate, whose seed's archive it reads
    seed: int
    task: str
    mode: str  # "ft" or "fz"
    untrained: bool  # the arm's architecture, freshly initialised: its gate

    @property
    def encoder(self) -> str:
        """What a table row calls it: the arm, or its untrained architecture (`untrained_lstm`)."""
        return f"untrained_{self.arm}" if self.untrained else self.arm

    @property
    def name(self) -> str:
        # A pre-trained archive is named by its rate, so that a choice a wider sweep moves never reads the old
        # one's results; the untrained architecture is the same at every rate.
        rate = "" if self.untrained else f"-lr{self.rate:g}"
        return f"{self.encoder}{rate}-{self.task}-{self.mode}-seed{self.seed}"

    @property
    def source(self) -> Pretraining:
        """The pre-training run whose archive it reads (for its architecture alone, untrained)."""
        return Pretraining(self.arm, self.rate, self.seed)

    def folder(self, arena: Path) -> Path:
        return arena / "glue" / self.name

    @property
    def setting(self) -> str:
        """glue.libsonnet's settings.encoder."""
        return f"{'random' if self.untrained else 'archive'}-{self.mode}"


def sweep(plan: Plan, arm: Optional[str] = None) -> list[Pretraining]:
    """Each arm's (or `arm`'s) runs at its rates, at the first seed: on the tuning budget where the plan has one."""
    return [
        Pretraining(each.name, rate, plan.seeds[0], tuning=plan.tuning is not None)
        for each in plan.arms
        if arm in (None, each.name)
        for rate in each.rates
    ]


def seeded(plan: Plan, rates: dict[str, float]) -> list[Pretraining]:
    """Each arm's seeds at its chosen rate (`rates`), the first seed's being a run of the sweep."""
    return [Pretraining(arm.name, rates[arm.name], seed) for seed in plan.seeds for arm in plan.arms]


def fine_tunings(plan: Plan, rates: dict[str, float]) -> list[FineTuning]:
    """Seed-major, so that an arena stopped part-way has every arm on the same seeds."""
    if plan.glue is None:
        return []
    return [
        FineTuning(arm.name, rates[arm.name], seed, task, mode, untrained)
        for seed in plan.seeds
        for task in plan.glue.tasks
        for mode in plan.glue.modes
        for arm in plan.arms
        for untrained in (False, True)
    ]


def pretraining_config(plan: Plan, run: Pretraining, cuda_device: int) -> str:
    arm = plan.arm(run.arm)
    encoder = f"\n  model+: {{ encoder: {json.dumps(arm.encoder)} }}," if arm.encoder else ""
    corpus, epochs, budget = plan.corpus, plan.epochs, ""
    if run.tuning:
        tuning = plan.sweep_budget
        corpus = {**corpus, "train": tuning.train, "validation": tuning.validation}
        epochs, budget = tuning.epochs, " (the tuning budget)"
    return (
        f"// maelmo-arena: arm {arm.name} at learning rate {run.rate:g}, seed {run.seed}, {epochs} epochs{budget}\n"
        f"(import {json.dumps(arm.config)}) + {{\n"
        f"  data:: {json.dumps(corpus)},\n"
        f"  sizes+:: {{ epochs: {epochs} }},\n"
        f"  settings+:: {{ seed: {run.seed}, cuda_device: {cuda_device} }},{encoder}\n"
        f"  trainer+: {{ optimizer+: {{ lr: {run.rate!r} }} }},\n"
        "}\n"
    )


def glue_config(plan: Plan, run: FineTuning, cuda_device: int) -> str:
    assert plan.glue is not None
    task = packaged_config(f"glue/{run.task}")
    if task is None:
        raise FileNotFoundError(f"training_config/glue/{run.task}.jsonnet is missing from the installation")
    head = f"\n  model+: {{ encoder_hidden_dim: {plan.glue.head_hidden} }}," if plan.glue.head_hidden else ""
    stop = f"\n  trainer+: {{ num_epochs: {plan.glue.validations} }}," if plan.glue.validations else ""
    return (
        f"// maelmo-arena: {run.encoder}, GLUE {run.task} {run.mode}, seed {run.seed}\n"
        f"(import {json.dumps(str(task.resolve()))}) + {{\n"
        f'  settings+:: {{ seed: {run.seed}, encoder: "{run.setting}", cuda_device: {cuda_device} }},'
        f"{head}{stop}\n}}\n"
    )


def glue_environment(plan: Plan, archive: Path) -> dict[str, str]:
    """The variables the GLUE configs read their paths from."""
    assert plan.glue is not None
    return {
        "MAELMO_GLUE_DIR": plan.glue.directory,
        "MAELMO_LM_ARCHIVE": str(archive),
        "MAELMO_VOCAB": plan.corpus["vocab"],
    }


def glue_inputs(plan: Plan) -> dict[str, list[str]]:
    """{task: the files its GLUE runs read}, from the task's own config evaluated with the arena's folder: where the
    task keeps its training and dev rows is said there (glue.libsonnet), not here."""
    assert plan.glue is not None
    first = plan.arms[0]
    environment = {**os.environ, **glue_environment(plan, Path("model.tar.gz"))}
    inputs = {}
    for task in plan.glue.tasks:
        run = FineTuning(first.name, first.rates[0], plan.seeds[0], task, "ft", untrained=False)
        text = glue_config(plan, run, -1)
        config = json.loads(_jsonnet.evaluate_snippet(f"{run.name}.jsonnet", text, ext_vars=environment))
        inputs[task] = [config["train_data_path"], config["validation_data_path"]]
    return inputs


def read_metric(folder: Path, key: str) -> Optional[float]:
    """A finished run's `key` from its metrics.json; None while it has not finished."""
    metrics = folder / "metrics.json"
    if not (metrics.is_file() and (folder / "model.tar.gz").is_file()):
        return None
    value = json.loads(metrics.read_text()).get(key)
    return None if value is None else float(value)


def write_whole(path: Path, text: str) -> None:
    """`text` into `path`, whole or not at all: workers sharing the folder may write the same file at once, and
    a reader (or a stop) never meets half of one."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(text)
    os.replace(partial, path)
