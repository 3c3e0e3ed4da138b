"""
The probe's campaigns: can the arena's GLUE protocol tell encoders apart at this scale?
"""

from reproduction.lm_runs import SEEDS

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
# The same pre-training under two names: where a machine lacks the arena's archive, a GLUE run reads the probe's
# rather than pre-training the same encoder again (runner.pretrained_encoder).
SAME_PRETRAINING = {("arena_encoders", "masked_elmo-seed1"): PROBE_ENCODER}


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
