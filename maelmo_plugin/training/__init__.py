"""
The trainer pieces every family uses (pre-training, GLUE, NER): crash-safe checkpoints, exact mid-epoch resume,
deterministic GPU kernels, the throughput, validation-curve and weight-snapshot callbacks, and the per-token perplexity metric.
"""

# Importing these modules registers "maelmo_atomic" (checkpointer), "maelmo_exact_resume", "maelmo_throughput",
# "maelmo_validation_curve", "maelmo_weight_snapshots" and "maelmo_deterministic" (callbacks) with AllenNLP.
from maelmo_plugin.training import (  # noqa: F401
    atomic_checkpointer,
    determinism,
    exact_resume,
    throughput_callback,
    validation_curve,
    weight_snapshots,
)
