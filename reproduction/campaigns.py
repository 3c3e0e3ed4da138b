"""
What each campaign of reproduction.runner runs: every run of a claim as a variant of a config under
training_config/ (a base config and Jsonnet fields), with its seed and what it is scored on afterwards.
reproduction.runner runs them; this file only says what they are.
"""

from typing import Optional

from reproduction import RESULTS
from reproduction.tuning import BERT_TUNING_WARMUP, TUNING, TUNING_EPOCHS, chosen, load_tuning, sweep

SEEDS = (1, 2, 3)
BTBPTT_SEEDS = (1, 2, 3, 4, 5, 6)
SEQUENCE_SEEDS = (1, 2, 3, 4, 5)
PAPER_WORDPIECES_PER_UPDATE = 2560  # Table 5: 20 x 128 and 128 x 20
# WikiText-2 articles start at their " = Title = " line.
ARTICLES = 'document_start_pattern: "^ = [^=].* = $"'


def lm_run(name, base, data, sizes="", fields="", curve_every=100, trainer="", callbacks=""):
    """A pre-training run: `base` under training_config/lm/, plus Jsonnet `sizes+::`, `trainer+:` and other fields;
    `callbacks`: more trainer callbacks (Jsonnet objects, comma-separated) after the validation curve."""
    curve = f'{{ type: "maelmo_validation_curve", every_updates: {curve_every} }}'
    callbacks = f"{curve}, {callbacks}" if callbacks else curve
    return {
        "name": name,
        "config": f"lm/{base}",
        "data": data,
        "fields": f"sizes+:: {{ {ARTICLES}, {sizes} }}, {fields} trainer+: {{ callbacks+: [{callbacks}], {trainer} }},",
    }


def small(
    name,
    data,
    seed,
    sizes="",
    fields="",
    base="pretrain_small.jsonnet",
    curve_every=100,
    trainer="",
    callbacks="",
):
    return lm_run(
        name, base, data, sizes, f"settings+:: {{ seed: {seed} }}, {fields}", curve_every, trainer, callbacks
    )


def stateful_reading(length: int, batch_size: int, bidirectional: bool) -> dict:
    """`allennlp evaluate` overrides that read the validation text as training reads it: `batch_size` contiguous
    rows of `length`-token windows in order (odd rows right to left under BTBPTT), each window starting from the
    states its row reached on the window before."""
    return {
        "model.carry_states_in_evaluation": True,
        "validation_data_loader.stateful": True,
        "validation_data_loader.sequence_length": length,
        "validation_data_loader.batch_size": batch_size,
        "validation_data_loader.bidirectional": bidirectional,
    }


def elmo_recipe(variant: str, lr) -> str:
    """The biLM's `sizes` fields for a sweep variant: "adam" or "adagrad" (bilm-tf's) with ELMo's carried states,
    "zero": Adam with every window from zero states."""
    if variant == "zero":
        return f'optimizer: "adam", lr: {lr}, stateful: false'
    return f'optimizer: "{variant}", lr: {lr}'


def tuning_run(encoder: str, lr: str) -> dict:
    base, _ = TUNING[encoder]
    name, sizes, trainer = f"{encoder}-lr{lr}", f"epochs: {TUNING_EPOCHS}", ""
    if encoder.startswith("bert"):
        layer_norm = encoder.removeprefix("bert_")
        sizes += f', lr: {lr}, warmup_steps: {BERT_TUNING_WARMUP}, layer_norm: "{layer_norm}"'
    elif encoder.startswith("elmo"):
        sizes += f", {elmo_recipe(encoder.removeprefix('elmo_'), lr)}"
    else:
        trainer = f"optimizer+: {{ lr: {lr} }},"
    return small(name, "subset", 1, sizes, base=base, curve_every=100, trainer=trainer)


def claims():
    short = "data_loader+: { sequence_length: 20, batch_size: 32 },"  # 640 word-pieces per update
    return {
        # Table 5: windows of 128 against 20 at equal word-pieces per update (640), 4 epochs; each model is
        # also scored on validation windows of 20, 64 and 128 (the paper does not say which it scored on).
        "sequence_length": [
            {
                **small(
                    f"seq{length}-seed{seed}",
                    "subset",
                    seed,
                    "epochs: 4",
                    f"data_loader+: {{ sequence_length: {length}, batch_size: {640 // length} }},",
                ),
                "score_windows": (20, 64, 128),
            }
            for seed in SEEDS
            for length in (20, 128)
        ],
        # The arena's Table 5, as the paper ran it: windows of 20 (128 rows) against 128 (20 rows) at its 2,560
        # word-pieces per update, on all of WikiText-2's training text for 2 epochs (the arena encoders' budget),
        # 5 paired seeds. Masks are drawn by stream position (`mask_by_position`), in the validation curves and
        # when each archive is scored on windows of 20 and of 128: a word-piece is masked alike whatever window
        # it falls in, so each model scored on its own windows is scored on the same masked tokens as the other.
        "arena_sequence_length": [
            {
                **small(
                    f"seq{length}-seed{seed}",
                    "full",
                    seed,
                    "epochs: 2",
                    f"data_loader+: {{ sequence_length: {length}, batch_size: {PAPER_WORDPIECES_PER_UPDATE // length} }}, "
                    "validation_data_loader+: { mask_by_position: true },",
                    curve_every=250,
                ),
                "score_windows": (20, 128),
                "score_by_position": True,
            }
            for seed in SEQUENCE_SEEDS
            for length in (20, 128)
        ],
        # Table 6 (batch 20, sequence 20): BTBPTT against plain TBPTT, 6 epochs for the curves to flatten, 6 paired
        # seeds (3 left the paper's 3% inside the interval). Besides the stateless validation of the curves, each
        # archive is scored as it trained: stateful rows of 20-token windows, the states carried from window to
        # window (the mechanism BTBPTT is about: better initial states).
        "btbptt": [
            {
                **small(
                    f"{arm}-seed{seed}",
                    "subset",
                    seed,
                    "epochs: 6",
                    f"data_loader+: {{ sequence_length: 20, batch_size: 20, bidirectional: {bidirectional} }},",
                ),
                "score_stateful": stateful_reading(20, 20, bidirectional == "true"),
            }
            for seed in BTBPTT_SEEDS
            for arm, bidirectional in (("btbptt", "true"), ("tbptt", "false"))
        ],
        # Section 2.2: the fused cell against ELMo's clipped cell, at ELMo's initialisation for both (and the
        # fused cell at torch's, the default), 2 epochs, speed from the same runs.
        "cell": [
            small(
                f"{name}-seed{seed}",
                "subset",
                seed,
                "epochs: 2",
                f'{short} model+: {{ encoder+: {{ cell: "{cell}", initialization: "{init}" }} }},',
            )
            for seed in SEEDS
            for name, cell, init in (
                ("fused-elmo_init", "fused", "elmo"),
                ("elmo", "elmo", "torch"),
                ("fused-torch_init", "fused", "torch"),
            )
        ],
        # Section 3.1: k=4 mask sets against k=1, compared at equal updates (3 epochs each) and at equal
        # training seconds: k=1 for 12 epochs too, about k=4's time on a CPU, where a k=4 update costs about
        # 4 k=1 updates (the paper's GPUs: +6%); fewer validations, as the curve is 4 times as long.
        "mask_accumulation": [
            small(f"k{k}-seed{seed}", "subset", seed, f"epochs: 3, num_mask_sets: {k}", short)
            for seed in SEEDS[:2]
            for k in (1, 4)
        ]
        + [
            small(
                f"k1_12_epochs-seed{seed}",
                "subset",
                seed,
                "epochs: 12, num_mask_sets: 1",
                short,
                curve_every=400,
            )
            for seed in SEEDS[:2]
        ],
        # docs/reproduction.md, the baselines: each encoder's learning rate (and BERT*'s LayerNorm placement)
        # chosen on the validation perplexity at the end of the same small budget, never on GLUE.
        "tuning": [tuning_run(encoder, lr) for encoder, (_, rates) in TUNING.items() for lr in rates],
        # Section 3.3 (the report's first version): validation masked perplexity against compute, Masked ELMo
        # and BERT* (about the same number of parameters), on all of WikiText-2's training text, 2 epochs
        # (about an hour each on one core; ELMo's softmax at every position makes it about twice that); also
        # Table 2's encoders. The arena's encoders (arena_encoders, below) replace them.
        "compute": [
            small("masked_elmo", "full", 1, "epochs: 2", curve_every=250),
            # BERT's warm-up over the first 10% of the updates (2 epochs of about 1,250).
            small(
                "bert",
                "full",
                1,
                "epochs: 2, warmup_steps: 250",
                base="pretrain_bert_small.jsonnet",
                curve_every=250,
            ),
            small("elmo", "full", 1, "epochs: 2", base="pretrain_elmo_small.jsonnet", curve_every=250),
        ],
    }


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


# The arena's first biLM: trained from ELMo's carried states at the stateful Adam sweep's rate, the record of why
# the arena's biLM now trains from zero states (its seed 3 was stopped at update 750, its zero-state forward
# perplexity past 10^14). Its runs are kept under this name, and fine-tuned in arena_glue beside the others.
STATEFUL_ELMO = {"rate": 8e-3, "variant": "adam", "seeds": (1, 2)}


# The arena's first zero-state biLM: the rate with the lowest final perplexity, 8e-3, before ties went to the lowest
# rate (tuning.TIED). It fine-tuned below its untrained architecture on SST-2; its runs are kept under this name as
# the record, and fine-tuned in arena_glue beside the others.
LOWEST_PERPLEXITY_ELMO = {"name": "elmo_lr8e3", "rate": 8e-3, "variant": "zero", "seeds": SEEDS}


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
    records = (
        (STATEFUL_ELMO, "elmo_stateful", {"score_stateful": ELMO_AS_TRAINED}),
        (LOWEST_PERPLEXITY_ELMO, LOWEST_PERPLEXITY_ELMO["name"], {}),
    )
    return runs + [
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


# Each arena encoder's architecture, for the runs that fine-tune or freeze it untrained (random-*: the weights are
# drawn afresh from the GLUE run's seed): the arena's config trained on WikiText-2's first 100 lines, which gives an
# archive of the same model and vocabulary in seconds instead of the encoder's hours.
NOT_KEPT = ("architectures",)  # their archives are a means: no result of theirs goes to the report


def architecture_runs() -> list:
    return [{"name": encoder, "tuned": encoder, "seed": 1, "data": "tiny"} for encoder in ARENA_ENCODERS]


# BERT* tuned on the budget it runs (2 epochs of all of WikiText-2, 2,494 updates, seed 1), where its rate was
# chosen on the tuning campaign's 544 updates with a warm-up of 55 and then ran with 250, still falling at its end:
# two warm-up lengths (10% and 40% of the updates), pre-LN above the old grid's top (2e-3, still falling steeply),
# post-LN at its chosen rate and the next, and the schedule (linear decay to zero, or constant after the warm-up).
BERT_BUDGET = [
    *(("pre", rate, warmup, "linear") for rate in ("2e-3", "4e-3", "8e-3") for warmup in (250, 1000)),
    *(("post", rate, warmup, "linear") for rate in ("1e-3", "2e-3") for warmup in (250, 1000)),
    ("pre", "4e-3", 250, "constant"),
]


def bert_budget_runs() -> list:
    runs = []
    for layer_norm, rate, warmup, schedule in BERT_BUDGET:
        sizes = f'epochs: 2, lr: {rate}, warmup_steps: {warmup}, layer_norm: "{layer_norm}"'
        constant = f'learning_rate_scheduler: {{ type: "constant_with_warmup", num_warmup_steps: {warmup} }},'
        trainer = constant if schedule == "constant" else ""
        name = f"{layer_norm}-lr{rate}-warmup{warmup}-{schedule}"
        runs.append(
            small(
                name, "full", 1, sizes, base="pretrain_bert_small.jsonnet", curve_every=250, trainer=trainer
            )
        )
    return runs


def tuned(encoder: str) -> Optional[tuple]:
    """(learning rate, variant: BERT*'s LayerNorm, the ELMo biLM's optimizer, or None): the tuning campaign's
    choice, once all its runs are kept."""
    runs = load_tuning(RESULTS / "tuning").get(encoder, [])
    if sorted(run["name"] for run in runs) != sorted(sweep(encoder)):
        return None
    best = chosen(encoder, runs)
    return best["lr"], best["variant"]


def resolved(run: dict) -> Optional[dict]:
    """An arena pre-training run with its tuned rate filled in; None while the tuning has not finished."""
    choice = run.get("fixed") or tuned(run["tuned"])
    if choice is None:
        return None
    rate, variant = choice  # variant: BERT*'s LayerNorm, the ELMo biLM's optimizer
    sizes, trainer = "epochs: 2", f"optimizer+: {{ lr: {rate} }},"
    if run["tuned"] == "bert":
        sizes, trainer = f'epochs: 2, lr: {rate}, warmup_steps: {BERT_WARMUP}, layer_norm: "{variant}"', ""
    elif run["tuned"] == "elmo":
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


# Tables 2-3: the encoders of the "compute" claim (the same data and updates), and the random control,
# fine-tuned ("ft") on GLUE with the reduced CPU protocol of docs/results.md (a 2 x 256 head, 600 updates;
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
ARENA_GLUE_ENCODERS = {
    "random_elmo": "random-ft",
    "random_bert": "random-ft",
    **{f"{encoder}-fz": "archive-fz" for encoder in ("masked_elmo", "elmo", "bert")},
    **{f"{encoder}-fz": "random-fz" for encoder in ("random", "random_elmo", "random_bert")},
}
UNTRAINED_ARCHITECTURE = {"random": "masked_elmo", "random_elmo": "elmo", "random_bert": "bert"}


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
    # The arena also fine-tunes its biLMs' records, on the seeds they were pre-trained with.
    records = runs(["elmo_stateful"], STATEFUL_ELMO["seeds"]) + runs(
        [LOWEST_PERPLEXITY_ELMO["name"]], LOWEST_PERPLEXITY_ELMO["seeds"]
    )
    added = [{**run, "mode": ARENA_GLUE_ENCODERS[run["encoder"]]} for run in runs(ARENA_GLUE_ENCODERS, SEEDS)]
    return runs(GLUE_ENCODERS, SEEDS) + [{**run, "mode": "archive-ft"} for run in records] + added


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


# Can the GLUE probe tell encoders apart at this scale? One Masked ELMo pre-training, the arena's masked_elmo-seed1 run
# again (the same seeded config, so the same run), keeping its weights after PROBE_SNAPSHOTS updates, each snapshot
# scored on the validation text (probe_encoder); then the arena's GLUE protocol, fine-tuned ("ft") and frozen under
# a scalar mix ("fz", the paper's ELMo row), at the snapshots of PROBE_POINTS and the final weights, and frozen for
# the untrained architecture (its fine-tuned runs are arena_glue's random encoder), GLUE seeds 1-3 (probe). The
# points were fixed before the run from the arena run's curve (update 250: 138, 500: 89, final 38.6): update 100
# for about 300, update 500 for about 100.
PROBE_SNAPSHOTS = (50, 100, 150, 250, 500, 1000)
PROBE_POINTS = {"update100": 100, "update500": 500, "final": None}
PROBE_ENCODER = ("probe_encoder", "masked_elmo-seed1")
PROBE_TASKS = ("sst2", "cola", "rte")  # the quickest first: a stopped campaign has the most pairs to read


def probe_encoder_runs() -> list:
    snapshots = f'{{ type: "maelmo_weight_snapshots", at_updates: {list(PROBE_SNAPSHOTS)} }}'
    return [
        {
            "name": PROBE_ENCODER[1],
            "tuned": "masked_elmo",
            "seed": 1,
            "callbacks": snapshots,
            "score_snapshots": PROBE_SNAPSHOTS,
        }
    ]


def probe_runs() -> list:
    points = [(point, "masked_elmo", "archive") for point in PROBE_POINTS] + [
        ("untrained", "random", "random")
    ]
    return [
        {
            "name": f"{point}-{mode}-{task}-seed{seed}",
            "encoder": encoder,
            "mode": f"{source}-{mode}",
            "source": PROBE_ENCODER,
            "snapshot": PROBE_POINTS.get(point),
            "task": task,
            "seed": seed,
        }
        for seed in SEEDS
        for task in PROBE_TASKS
        for mode in ("ft", "fz")
        for point, encoder, source in points
        if (point, mode) != ("untrained", "ft")
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


def all_claims() -> dict:
    return {
        **claims(),
        "arena_encoders": arena_encoder_runs(),
        "architectures": architecture_runs(),
        "bert_budget": bert_budget_runs(),
        **{claim: glue_runs(claim) for claim in GLUE_CLAIMS},
        "elmo_transfer": elmo_transfer_runs(),
        "probe_encoder": probe_encoder_runs(),
        "probe": probe_runs(),
    }
