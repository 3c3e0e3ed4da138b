"""
The fair arena's pre-training: each encoder's small config at its tuned rate on all of WikiText-2 for 2 epochs, the
ELMo biLM's records, each encoder's architecture on a tiny budget (for the untrained baselines), and BERT* tuned again
on the budget it runs.
"""

import json
from pathlib import Path
from typing import Optional, TypedDict

from reproduction import RESULTS
from reproduction.lm_runs import SEEDS, elmo_recipe, small, stateful_reading
from reproduction.tuning import chosen, load_tuning, sweep

# The fair arena's encoders: each small config at its tuned learning rate (and BERT*'s tuned LayerNorm), on all of
# WikiText-2's training text for 2 epochs (about 2,500 updates), 3 seeds each; they serve section 3.3 (compute) and,
# each fine-tuned once per pre-training seed, Tables 2-3 (arena_glue).
ARENA_ENCODERS = {
    "masked_elmo": "pretrain_small.jsonnet",
    "bert": "pretrain_bert_small.jsonnet",
    "elmo": "pretrain_elmo_small.jsonnet",
}
BERT_WARMUP = 250  # 10% of the 2 epochs' updates, as the tuning budget's


# The ELMo biLM trains its forward direction from carried states (zero states once per epoch per row) but is
# validated from zero states, as GLUE uses it: the first version's run showed the two readings can part (its
# validation forward perplexity went 116 -> 3,160 -> 95 while its training forward perplexity stayed level with
# the backward one, 175 and 176 over the epoch). Its archives are also scored as they trained, to tell the two apart.
ELMO_AS_TRAINED = stateful_reading(64, 32, bidirectional=False)


class ElmoRecord(TypedDict):
    """A biLM kept as a record: the rate and optimizer variant (tuning's) it trained at, and its seeds."""

    rate: float
    variant: str
    seeds: tuple[int, ...]


class NamedElmoRecord(ElmoRecord):
    name: str


class BertRecord(TypedDict):
    """A BERT* kept as a record: its recipe (bert_recipe's arguments) and its seeds."""

    name: str
    recipe: tuple[str, str, int, str]
    seeds: tuple[int, ...]


# The arena's first biLM: trained from ELMo's carried states at the stateful Adam sweep's rate, the record of why
# the arena's biLM now trains from zero states (its seed 3 was stopped at update 750, its zero-state forward
# perplexity past 10^14). Its runs are kept under this name, and fine-tuned in arena_glue beside the others.
STATEFUL_ELMO: ElmoRecord = {"rate": 8e-3, "variant": "adam", "seeds": (1, 2)}


# The arena's first zero-state biLM: the rate with the lowest final perplexity, 8e-3, before ties went to the lowest
# rate (maelmo_plugin/arena/rates.py, TIED). It fine-tuned below its untrained architecture on SST-2; its runs are kept under this name as
# the record, and fine-tuned in arena_glue beside the others.
LOWEST_PERPLEXITY_ELMO: NamedElmoRecord = {
    "name": "elmo_lr8e3",
    "rate": 8e-3,
    "variant": "zero",
    "seeds": SEEDS,
}


# The arena's first BERT*: the tuning campaign's choice (post-LN, AdamW 1e-3) with a warm-up of BERT_WARMUP and linear
# decay. On the budget it runs it ended at 277.9, more than the tie rule's 1% above pre-LN at 2e-3 with a warm-up of
# 1,000 (259.1), so it cannot be the budget's choice whatever the other recipes give: its runs are kept under this
# name as the record, fine-tuned and frozen in arena_glue beside the others.
TUNING_RECIPE_BERT: BertRecord = {
    "name": "bert_tuning_recipe",
    "recipe": ("post", "1e-3", BERT_WARMUP, "linear"),
    "seeds": SEEDS,
}


def arena_encoder_runs() -> list:
    runs = [
        {
            "name": f"{encoder}-seed{seed}",
            "tuned": encoder,
            "seed": seed,
            **({"score_stateful": ELMO_AS_TRAINED} if encoder == "elmo" else {}),
        }
        for seed in SEEDS
        for encoder in ARENA_ENCODERS
    ]
    records: tuple[tuple[ElmoRecord, str, dict], ...] = (
        (STATEFUL_ELMO, "elmo_stateful", {"score_stateful": ELMO_AS_TRAINED}),
        (LOWEST_PERPLEXITY_ELMO, LOWEST_PERPLEXITY_ELMO["name"], {}),
    )
    bert_records = [
        {
            "name": f"{TUNING_RECIPE_BERT['name']}-seed{seed}",
            "tuned": "bert",
            "fixed": TUNING_RECIPE_BERT["recipe"],
            "seed": seed,
        }
        for seed in TUNING_RECIPE_BERT["seeds"]
    ]
    return (
        runs
        + bert_records
        + [
            {
                "name": f"{name}-seed{seed}",
                "tuned": "elmo",
                "fixed": (record["rate"], record["variant"]),
                "seed": seed,
                **scored,
            }
            for record, name, scored in records
            for seed in record["seeds"]
        ]
    )


# Each arena encoder's architecture, for the runs that fine-tune or freeze it untrained (random-*: the weights are
# drawn afresh from the GLUE run's seed): the arena's config trained on WikiText-2's first 100 lines, which gives an
# archive of the same model and vocabulary in seconds instead of the encoder's hours.
NOT_KEPT = ("architectures",)  # their archives are a means: no result of theirs goes to the report


def architecture_runs() -> list:
    # BERT*'s record has its own: its LayerNorm is not where the budget's choice put the arena's BERT*'s.
    record = {"name": TUNING_RECIPE_BERT["name"], "tuned": "bert", "fixed": TUNING_RECIPE_BERT["recipe"]}
    return [{"name": encoder, "tuned": encoder, "seed": 1, "data": "tiny"} for encoder in ARENA_ENCODERS] + [
        {**record, "seed": 1, "data": "tiny"}
    ]


# BERT* tuned on the budget it runs (2 epochs of all of WikiText-2, 2,494 updates, seed 1), where its rate was
# chosen on the tuning campaign's 544 updates with a warm-up of 55 and then ran with 250, still falling at its end:
# two warm-up lengths (10% and 40% of the updates), pre-LN above the old grid's top (2e-3, still falling steeply),
# post-LN at its chosen rate and the next, and the schedule (linear decay to zero, or constant after the warm-up).
# The tie rule's choice among them is the arena's BERT* (budget_recipe).
BERT_BUDGET = [
    *(("pre", rate, warmup, "linear") for rate in ("2e-3", "4e-3", "8e-3") for warmup in (250, 1000)),
    *(("post", rate, warmup, "linear") for rate in ("1e-3", "2e-3") for warmup in (250, 1000)),
    ("pre", "4e-3", 250, "constant"),
]
# That recipe is also one of the budget's, config for config at seed 1 (tested): the campaign reads the record's run
# (load_budget) rather than repeating it.
BERT_BUDGET_SHARED = {"post-lr1e-3-warmup250-linear": f"{TUNING_RECIPE_BERT['name']}-seed1"}


def bert_budget_name(layer_norm: str, rate: str, warmup: int, schedule: str) -> str:
    return f"{layer_norm}-lr{rate}-warmup{warmup}-{schedule}"


def bert_recipe(layer_norm: str, rate: str, warmup: int, schedule: str) -> tuple:
    """(sizes, trainer) of pretrain_bert_small.jsonnet for 2 epochs of a BERT* recipe: its LayerNorm placement, AdamW
    rate, warm-up and schedule (linear decay to zero, or constant after the warm-up)."""
    sizes = f'epochs: 2, lr: {rate}, warmup_steps: {warmup}, layer_norm: "{layer_norm}"'
    constant = f'learning_rate_scheduler: {{ type: "constant_with_warmup", num_warmup_steps: {warmup} }},'
    return sizes, constant if schedule == "constant" else ""


def bert_budget_runs(shared: bool = False) -> list:
    """The budget's runs, less those BERT_BUDGET_SHARED reads from the arena (with them if `shared`)."""
    runs = []
    for recipe in BERT_BUDGET:
        name = bert_budget_name(*recipe)
        if name in BERT_BUDGET_SHARED and not shared:
            continue
        sizes, trainer = bert_recipe(*recipe)
        runs.append(
            small(
                name, "full", 1, sizes, base="pretrain_bert_small.jsonnet", curve_every=250, trainer=trainer
            )
        )
    return runs


def load_budget(results: Path) -> list:
    """[{name, recipe, variant, lr, warmup, schedule, curve, shared}]: the budget campaign's kept runs, and those it
    reads from the arena (BERT_BUDGET_SHARED) once they are kept; in BERT_BUDGET's order."""
    paths = {path.parent.name: path for path in (results / "bert_budget").glob("*/validation_curve.json")}
    for name, arena_run in BERT_BUDGET_SHARED.items():
        path = results / "arena_encoders" / arena_run / "validation_curve.json"
        if path.exists():
            paths[name] = path
    runs = []
    for recipe in BERT_BUDGET:
        layer_norm, rate, warmup, schedule = recipe
        name = bert_budget_name(*recipe)
        if name in paths:
            runs.append(
                {
                    "name": name,
                    "recipe": recipe,
                    "variant": layer_norm,
                    "lr": float(rate),
                    "warmup": warmup,
                    "schedule": schedule,
                    "curve": json.loads(paths[name].read_text()),
                    "shared": BERT_BUDGET_SHARED.get(name),
                }
            )
    return runs


def budget_choice(runs: list) -> Optional[dict]:
    """The tie rule's recipe (tuning.chosen: the lowest rate within TIED of the lowest final perplexity) once every
    recipe of BERT_BUDGET is kept; None before."""
    if len(runs) < len(BERT_BUDGET):
        return None
    return chosen("bert", runs)


def budget_recipe() -> Optional[tuple]:
    """(LayerNorm, rate, warm-up, schedule): the arena's BERT*, the budget's choice once all its recipes are kept."""
    choice = budget_choice(load_budget(RESULTS))
    return choice["recipe"] if choice else None


def budget_twin(claim: str, name: str) -> Optional[tuple]:
    """The (claim, run) that is the arena's BERT* at seed 1 under another name, once the budget has chosen: the chosen
    recipe's budget run, seed 1 and config for config (tested); None for every other run. The campaign copies that
    run's results rather than training it again, and a GLUE run reads its archive where the arena's is missing."""
    recipe = (claim, name) == ("arena_encoders", f"bert-seed{SEEDS[0]}") and budget_recipe()
    if not recipe:
        return None
    chosen_name = bert_budget_name(*recipe)
    shared = BERT_BUDGET_SHARED.get(chosen_name)
    return ("arena_encoders", shared) if shared else ("bert_budget", chosen_name)


def tuned(encoder: str) -> Optional[tuple]:
    """(learning rate, variant: BERT*'s LayerNorm, the ELMo biLM's optimizer, or None): the tuning campaign's
    choice, once all its runs are kept."""
    runs = load_tuning(RESULTS / "tuning").get(encoder, [])
    if sorted(run["name"] for run in runs) != sorted(sweep(encoder)):
        return None
    best = chosen(encoder, runs)
    return best["lr"], best["variant"]


def resolved(run: dict) -> Optional[dict]:
    """An arena pre-training run with its tuned recipe filled in; None while its tuning has not finished."""
    if run["tuned"] == "bert":
        recipe = run.get("fixed") or budget_recipe()
        if recipe is None:
            return None
        sizes, trainer = bert_recipe(*recipe)
        variant = recipe[0]
    else:
        choice = run.get("fixed") or tuned(run["tuned"])
        if choice is None:
            return None
        rate, variant = choice  # variant: the ELMo biLM's optimizer
        sizes, trainer = "epochs: 2", f"optimizer+: {{ lr: {rate} }},"
        if run["tuned"] == "elmo":
            sizes, trainer = f"epochs: 2, {elmo_recipe(variant, rate)}", ""
    # A biLM trained from zero states has no carried states to be read with.
    scored = {key: run[key] for key in ("score_stateful",) if key in run and variant != "zero"}
    scored.update({key: run[key] for key in ("score_snapshots",) if key in run})
    return {
        **small(
            run["name"],
            run.get("data", "full"),
            run["seed"],
            sizes,
            run.get("fields", ""),
            base=ARENA_ENCODERS[run["tuned"]],
            curve_every=250,
            trainer=trainer,
            callbacks=run.get("callbacks", ""),
        ),
        **scored,
    }
