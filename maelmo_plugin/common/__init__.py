"""What the families share: the word-piece tokenizer and indexer, archive assets, and trainer pieces."""
# Importing these modules registers "maelmo_wordpiece" (tokenizer and indexer), "maelmo_wordpiece_mismatched",
# "maelmo_atomic" (checkpointer), "maelmo_throughput" and "maelmo_deterministic" (callbacks) with AllenNLP.
from maelmo_plugin.common import (  # noqa: F401
    atomic_checkpointer,
    determinism,
    throughput_callback,
    wordpiece,
    wordpiece_mismatched,
)
