"""What the families share: the word-piece tokenizer and indexer, archive assets, and trainer pieces."""
# Importing these modules registers "maelmo_wordpiece" (tokenizer and indexer), "maelmo_wordpiece_mismatched",
# "maelmo_atomic" (checkpointer) and "maelmo_throughput" (callback) with AllenNLP.
from maelmo_plugin.common import (  # noqa: F401
    atomic_checkpointer,
    throughput_callback,
    wordpiece,
    wordpiece_mismatched,
)
