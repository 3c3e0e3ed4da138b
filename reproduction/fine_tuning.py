"""
The GLUE campaigns: which encoder each fine-tune (or frozen run) reads, on which task and seed, and the pre-training
run whose archive it starts from.
"""

from reproduction.arena import LOWEST_PERPLEXITY_ELMO, STATEFUL_ELMO, TUNING_RECIPE_BERT
from reproduction.lm_runs import SEEDS
from reproduction.probe import PROBE_TASKS

# Tables 2-3: the encoders of the "compute" claim (the same data and updates), and the random control,
# fine-tuned ("ft") on GLUE with the reduced CPU protocol of docs/design.md (a 2 x 256 head, 600 updates;
# WNLI, reported apart as the paper does, 200 updates and one seed).
GLUE_ENCODERS = {
    "masked_elmo": "archive-ft",
    "elmo": "archive-ft",
    "bert": "archive-ft",
    "random": "random-ft",
}
GLUE_TASKS = {"rte": ("RTE", 6), "cola": ("CoLA", 6), "sst2": ("SST-2", 6), "wnli": ("WNLI", 2)}


# The arena's gate (each encoder against its own untrained architecture, fine-tuned the same way) and the paper's
# protocol, every encoder frozen under a scalar mix ("fz", the paper's ELMo row), untrained ones too. A run's
# encoder name is <architecture>[-fz]: random_elmo is the ELMo biLM's architecture untrained, random Masked ELMo's.
# Two conditions the probe runs already, the arena reads from it (SHARED_WITH_THE_PROBE*, below).
ARENA_GLUE_ENCODERS = {
    "random_elmo": "random-ft",
    "random_bert": "random-ft",
    **{f"{encoder}-fz": "archive-fz" for encoder in ("masked_elmo", "elmo", "bert")},
    **{f"{encoder}-fz": "random-fz" for encoder in ("random_elmo", "random_bert")},
}
UNTRAINED_ARCHITECTURE = {
    "random": "masked_elmo",
    "random_elmo": "elmo",
    "random_bert": "bert",
    f"random_{TUNING_RECIPE_BERT['name']}": TUNING_RECIPE_BERT["name"],  # post-LN, as the record (arena.py)
}
# The probe's untrained architecture frozen is the arena's random-fz: Masked ELMo's architecture untrained (drawn
# from the GLUE seed), frozen, on the same tasks and seeds. The arena reads those runs rather than repeating them.
SHARED_WITH_THE_PROBE = {"untrained-fz": "random-fz"}
# The probe's pre-training is the arena's masked_elmo-seed1 run again (the same seeded config; it ended at the same
# perplexity to the last digit), so its final weights frozen at GLUE seed 1 are the arena's masked_elmo-fz at seed 1
# (the arena pairs pre-training seed and GLUE seed): the arena reads those runs (draw_glue) rather than repeating them.
SHARED_WITH_THE_PROBE_AT_SEED_1 = {"final-fz": "masked_elmo-fz"}


def architecture(encoder: str) -> str:
    """The encoder a GLUE run's encoder name reads (`elmo-fz` -> `elmo`, `random_bert-fz` -> `random_bert`)."""
    return encoder.split("-")[0]


def glue_runs(claim: str) -> list:
    # Seed-major: a campaign stopped part-way has every encoder on the same tasks and seeds, rows to compare.
    def runs(encoders, seeds):
        return [
            {"name": f"{encoder}-{task}-seed{seed}", "encoder": encoder, "task": task, "seed": seed}
            for seed in seeds
            for task in GLUE_TASKS
            for encoder in encoders
            if task != "wnli" or seed == SEEDS[0]
        ]

    if claim != "arena_glue":
        return runs(GLUE_ENCODERS, SEEDS)
    # The arena also fine-tunes its records, on the seeds they were pre-trained with; BERT*'s record was frozen at
    # seed 1 before its budget chose another recipe.
    records = (
        runs(["elmo_stateful"], STATEFUL_ELMO["seeds"])
        + runs([LOWEST_PERPLEXITY_ELMO["name"]], LOWEST_PERPLEXITY_ELMO["seeds"])
        + runs([TUNING_RECIPE_BERT["name"]], TUNING_RECIPE_BERT["seeds"])
    )
    frozen_records = runs([f"{TUNING_RECIPE_BERT['name']}-fz"], SEEDS[:1])
    # and its untrained architecture's, fine-tuned at every seed and frozen at seed 1, which ran as random_bert's
    # before the budget moved the arena's BERT*'s LayerNorm
    untrained_record = f"random_{TUNING_RECIPE_BERT['name']}"
    untrained_records = [{**run, "mode": "random-ft"} for run in runs([untrained_record], SEEDS)] + [
        {**run, "mode": "random-fz"} for run in runs([f"{untrained_record}-fz"], SEEDS[:1])
    ]
    added = [
        {**run, "mode": ARENA_GLUE_ENCODERS[run["encoder"]]}
        for run in runs(ARENA_GLUE_ENCODERS, SEEDS)
        if not shared_with_the_probe(run)
    ]
    return (
        runs(GLUE_ENCODERS, SEEDS)
        + [{**run, "mode": "archive-ft"} for run in records]
        + [{**run, "mode": "archive-fz"} for run in frozen_records]
        + untrained_records
        + added
    )


def shared_with_the_probe(run: dict) -> bool:
    """Whether an arena GLUE run is one of the probe's (SHARED_WITH_THE_PROBE_AT_SEED_1), so not run again."""
    shared = run["encoder"] in SHARED_WITH_THE_PROBE_AT_SEED_1.values()
    return shared and run["seed"] == SEEDS[0] and run["task"] in PROBE_TASKS


# Why the arena's stateful ELMo biLM fine-tuned below the random encoder (section 1; no verdict reads it): SST-2
# fine-tunes in the arena's protocol (seed 1) of that biLM frozen, of its architecture untrained, of the tuning
# sweep's biLMs at three of Adam's rates, and of Masked ELMo frozen for a frozen encoder's level; each also keeps
# the sizes of the LSTM weights it starts from (lstm_weights.py). The biLM fine-tuned is arena_glue's
# elmo_stateful-sst2-seed1.
ELMO_TRANSFER = {  # run: (encoder, settings.encoder, the (claim, run) whose archive it starts from)
    "arena-fz": ("elmo", "archive-fz", ("arena_encoders", "elmo_stateful-seed1")),
    "untrained-ft": ("elmo", "random-ft", ("arena_encoders", "elmo_stateful-seed1")),
    **{
        f"sweep-lr{rate}-ft": ("elmo", "archive-ft", ("tuning", f"elmo_adam-lr{rate}"))
        for rate in ("5e-4", "2e-3", "8e-3")
    },
    "masked_elmo-arena-fz": ("masked_elmo", "archive-fz", ("arena_encoders", "masked_elmo-seed1")),
}


def elmo_transfer_runs() -> list:
    return [
        {
            "name": name,
            "encoder": encoder,
            "mode": mode,
            "source": source,
            "task": "sst2",
            "seed": 1,
            "keep_weights": True,  # the sizes of the LSTM weights the fine-tune starts from
        }
        for name, (encoder, mode, source) in ELMO_TRANSFER.items()
    ]


# Both GLUE campaigns run the same runs; "glue" fine-tunes the compute claim's encoders (one pre-training each,
# the report's first version), "arena_glue" the fair arena's (tuned, parameter-matched, pre-training seed = run seed).
GLUE_CLAIMS = ("glue", "arena_glue")
FINE_TUNING_CLAIMS = (*GLUE_CLAIMS, "elmo_transfer", "probe")


def encoder_source(claim: str, run: dict) -> tuple:
    """(claim, run name) of the pre-training run whose archive `run` (a GLUE run of `claim`) fine-tunes."""
    if "source" in run:
        return run["source"]
    encoder = architecture(run["encoder"])
    if claim == "glue":
        return ("compute", UNTRAINED_ARCHITECTURE.get(encoder, encoder))  # random-ft: the same architecture
    if encoder == "random" and run.get("mode", "random-ft") == "random-ft":  # the arena's first random runs
        return ("arena_encoders", f"masked_elmo-seed{run['seed']}")
    if encoder in UNTRAINED_ARCHITECTURE:  # an untrained architecture needs no pre-trained weights
        return ("architectures", UNTRAINED_ARCHITECTURE[encoder])
    return ("arena_encoders", f"{encoder}-seed{run['seed']}")
