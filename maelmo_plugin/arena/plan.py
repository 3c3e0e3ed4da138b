"""
An arena file read and checked: the arms, the corpus, the budget, the seeds and the GLUE tasks, each field
refused in one line naming it and the fix. The file is Jsonnet, as a training config (examples/encoder_arena/ has
one); its fields:

    arms:        {NAME: {config, encoder?, rates}}: each arm a pre-training config (a path, or a packaged name
                 such as "lm/pretrain_small") built on training_config/lm/pretrain_common.libsonnet, optionally
                 with `model.encoder` replaced by `encoder` (any registered encoder, by its "type"), and the
                 learning rates its sweep tries
    corpus:      {train, validation, vocab}: what every arm pre-trains on (the config's data::)
    epochs:      the budget, the same for every arm: pre-training epochs of the corpus, for the seeds (and the
                 sweep, without `tuning`)
    seeds:       at least 2; the first also runs each arm's sweep
    tuning:      optional {train?, validation?, epochs?}: a budget of its own for the sweeps (a subset of the
                 corpus, fewer epochs), each field the arena's where it is not given. Without it each arm's sweep
                 runs on the seeds' budget and its run at the chosen rate is the first seed's; with it the sweeps
                 run on the tuning budget and every seed is pre-trained at the chosen rate afresh
    glue:        optional {directory, tasks, modes ("ft", "fz"), validations, head_hidden}: the GLUE tasks every
                 pre-trained arm and its untrained architecture are fine-tuned (ft) or frozen (fz) on
    parameter_tolerance: how far the arms' parameter counts may part (0.05: 5% of the smallest)

What a run is, and its configuration, follows from the plan alone (`runs.py`), so that a stopped arena continues
with the same runs, and another plan in the same folder is refused.
"""

import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

from allennlp.common import Params

from maelmo_declarations.packaged_configs import packaged_config
from maelmo_declarations.refusals import Refusal

MODES = ("ft", "fz")
# The GLUE tasks of training_config/glue/ (one file each).
TASKS = ("cola", "mnli", "mrpc", "qnli", "qqp", "rte", "sst2", "stsb", "wnli")
DEFAULT_TOLERANCE = 0.05  # the reproduction's small configs' match (tests/lm/parameter_matching_test.py)


@dataclass(frozen=True)
class Arm:
    name: str
    config: str  # the pre-training config's absolute path
    encoder: Optional[dict]  # replaces the config's model.encoder
    rates: tuple[float, ...]


@dataclass(frozen=True)
class GluePlan:
    directory: str
    tasks: tuple[str, ...]
    modes: tuple[str, ...]
    validations: Optional[int]  # trainer.num_epochs (Table 1's intervals); None: the protocol's own stop
    head_hidden: Optional[int]  # the task BiLSTM's units per direction; None: jiant's 1024


@dataclass(frozen=True)
class Tuning:
    train: str
    validation: str
    epochs: int


@dataclass(frozen=True)
class Plan:
    arms: tuple[Arm, ...]
    corpus: dict[str, str]
    epochs: int
    seeds: tuple[int, ...]
    glue: Optional[GluePlan]
    parameter_tolerance: float
    tuning: Optional[Tuning] = None  # None: the sweeps run on the seeds' budget

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def arm(self, name: str) -> Arm:
        return next(arm for arm in self.arms if arm.name == name)

    @property
    def sweep_budget(self) -> Tuning:
        """What the sweeps train on: the tuning budget, or the seeds' own."""
        return self.tuning or Tuning(self.corpus["train"], self.corpus["validation"], self.epochs)


def read_plan(path: str) -> Plan:
    """The plan of the arena file `path`, every field checked (a `Refusal` naming the field)."""
    try:
        spec = Params.from_file(path).as_dict(quiet=True)
    except Exception as error:  # Jsonnet's syntax and evaluation errors, a missing environment variable
        raise Refusal(
            f"{path} cannot be read as an arena file: {str(error).strip().splitlines()[0]}"
        ) from None
    return plan_of(spec, os.getcwd(), path)  # paths as in a training config: from the working directory


def plan_of(spec: dict, base: str, source: str) -> Plan:
    def refuse(field: str, problem: str) -> Refusal:
        return Refusal(f"{source}: {field} {problem}")

    known = {"arms", "corpus", "epochs", "seeds", "glue", "parameter_tolerance", "tuning"}
    unknown = sorted(set(spec) - known)
    if unknown:
        raise refuse(
            unknown[0], f"is not a field of an arena file: the fields are {', '.join(sorted(known))}"
        )
    arms = spec.get("arms")
    if not isinstance(arms, dict) or len(arms) < 2:
        raise refuse("arms", "must name at least two arms ({NAME: {config, rates}}), to compare")
    corpus = spec.get("corpus")
    if not isinstance(corpus, dict) or sorted(corpus) != ["train", "validation", "vocab"]:
        raise refuse("corpus", "must be {train, validation, vocab}: the pre-training text and its vocabulary")
    corpus = {
        key: _existing(str(value), base, f"corpus.{key}", refuse, glob=key != "vocab")
        for key, value in corpus.items()
    }
    epochs = _epochs(spec.get("epochs"), "epochs", refuse)
    seeds = spec.get("seeds")
    if (
        not isinstance(seeds, list)
        or len(seeds) < 2
        or any(not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**32 for seed in seeds)
        or len(set(seeds)) != len(seeds)
    ):
        raise refuse(
            "seeds",
            "must be at least 2 different whole numbers from 0 to 2**32 - 1 (numpy's seeds): a verdict pairs "
            "arms by seed",
        )
    tolerance = spec.get("parameter_tolerance", DEFAULT_TOLERANCE)
    if not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 10:
        raise refuse("parameter_tolerance", f"must be a fraction such as 0.05, not {tolerance!r}")
    return Plan(
        arms=tuple(_arm(name, value, base, refuse) for name, value in arms.items()),
        corpus=corpus,
        epochs=epochs,
        seeds=tuple(seeds),
        glue=None if spec.get("glue") is None else _glue(spec["glue"], base, refuse),
        parameter_tolerance=float(tolerance),
        tuning=None if spec.get("tuning") is None else _tuning(spec["tuning"], corpus, epochs, base, refuse),
    )


def _epochs(epochs: Any, field: str, refuse) -> int:
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1:
        raise refuse(field, f"must be a whole number of epochs, at least 1, not {epochs!r}")
    return epochs


def _tuning(value: Any, corpus: dict[str, str], epochs: int, base: str, refuse) -> Tuning:
    """The sweeps' budget: each field the arena's where it is not given (the vocabulary always is)."""
    fields = ("train", "validation", "epochs")
    if not isinstance(value, dict) or not value:
        raise refuse("tuning", f"must be {{{', '.join(fields)}}} (any of them): the sweeps' own budget")
    extra = sorted(set(value) - set(fields))
    if extra:
        raise refuse(f"tuning.{extra[0]}", f"is not a field of tuning: {', '.join(fields)}")
    texts = {
        key: _existing(str(value[key]), base, f"tuning.{key}", refuse, glob=True)
        if key in value
        else corpus[key]
        for key in ("train", "validation")
    }
    chosen = _epochs(value["epochs"], "tuning.epochs", refuse) if "epochs" in value else epochs
    return Tuning(texts["train"], texts["validation"], chosen)


def _arm(name: str, value: Any, base: str, refuse) -> Arm:
    field = f"arms.{name}"
    if not name.replace("_", "").isalnum():
        raise refuse(field, "is not a name of letters, digits and underscores (it names folders and rows)")
    if not isinstance(value, dict) or "config" not in value or "rates" not in value:
        raise refuse(field, "must be {config, rates} (and optionally encoder)")
    extra = sorted(set(value) - {"config", "encoder", "rates"})
    if extra:
        raise refuse(f"{field}.{extra[0]}", "is not a field of an arm: config, encoder, rates")
    rates = value["rates"]
    if (
        not isinstance(rates, list)
        or not rates
        or any(isinstance(rate, bool) or not isinstance(rate, (int, float)) for rate in rates)
        or any(not math.isfinite(rate) or rate <= 0 for rate in rates)
        or len(set(rates)) != len(rates)
    ):
        raise refuse(
            f"{field}.rates", "must list different positive learning rates, such as [5e-4, 1e-3, 2e-3]"
        )
    encoder = value.get("encoder")
    if encoder is not None and (not isinstance(encoder, dict) or "type" not in encoder):
        raise refuse(
            f"{field}.encoder", 'must be an encoder\'s config with its "type", such as {type: "lstm", ...}'
        )
    config = str(value["config"])
    found = _config_path(config, base)
    if found is None:
        raise refuse(
            f"{field}.config",
            f"{config!r} is neither a file nor a packaged config (such as lm/pretrain_small): give its path",
        )
    return Arm(name, found, encoder, tuple(float(rate) for rate in sorted(rates)))


def _glue(value: Any, base: str, refuse) -> GluePlan:
    if not isinstance(value, dict) or not {"directory", "tasks"} <= set(value):
        raise refuse("glue", "must be {directory, tasks} (and optionally modes, validations, head_hidden)")
    extra = sorted(set(value) - {"directory", "tasks", "modes", "validations", "head_hidden"})
    if extra:
        raise refuse(
            f"glue.{extra[0]}", "is not a field of glue: directory, tasks, modes, validations, head_hidden"
        )
    directory = _existing(str(value["directory"]), base, "glue.directory", refuse)
    tasks = value["tasks"]
    if not isinstance(tasks, list) or not tasks or any(task not in TASKS for task in tasks):
        raise refuse("glue.tasks", f"must list tasks among {', '.join(TASKS)}, not {tasks!r}")
    modes = value.get("modes", ["ft"])
    if not isinstance(modes, list) or not modes or any(mode not in MODES for mode in modes):
        raise refuse("glue.modes", f'must list "ft" (fine-tuned), "fz" (frozen) or both, not {modes!r}')
    counts = {key: value.get(key) for key in ("validations", "head_hidden")}
    for key, count in counts.items():
        if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
            raise refuse(f"glue.{key}", f"must be a whole number, at least 1, not {count!r}")
    return GluePlan(directory, tuple(tasks), tuple(modes), counts["validations"], counts["head_hidden"])


def _existing(path: str, base: str, field: str, refuse, glob: bool = False) -> str:
    """`path` (relative to `base`, the working directory) made absolute; refused where nothing is there."""
    full = path if os.path.isabs(path) else os.path.normpath(os.path.join(base, path))
    if glob and any(char in path for char in "*?["):
        return full  # a glob, which the loader expands (and refuses where it matches nothing)
    if not os.path.exists(full):
        raise refuse(
            field,
            f"{full} does not exist: give its path (from the working directory, as a training config's)",
        )
    return full


def _config_path(config: str, base: str) -> Optional[str]:
    own = Path(config) if os.path.isabs(config) else Path(base) / config
    if own.is_file():
        return str(own.resolve())
    packaged = packaged_config(config)
    return str(packaged.resolve()) if packaged else None
