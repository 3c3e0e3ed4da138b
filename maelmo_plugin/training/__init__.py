"""
The trainer pieces every family uses (pre-training, GLUE, NER): crash-safe checkpoints, exact mid-epoch resume,
deterministic GPU kernels, data parallelism that reduces gradients once per update, the throughput,
validation-curve and weight-snapshot callbacks, and the per-token perplexity metric.
"""

# Importing these modules registers "maelmo_atomic" (checkpointer), "maelmo_exact_resume", "maelmo_throughput",
# "maelmo_validation_curve", "maelmo_weight_snapshots" and "maelmo_deterministic" (callbacks), and "maelmo_ddp"
# (DDP accelerator) with AllenNLP.
from maelmo_plugin.training import (  # noqa: F401
    atomic_checkpointer,
    ddp_accelerator,
    determinism,
    exact_resume,
    throughput_callback,
    validation_curve,
    weight_snapshots,
)
