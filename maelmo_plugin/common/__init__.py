"""What the families share: the word-piece tokenizer and indexer, and the archives' assets."""

# Importing these modules registers "maelmo_wordpiece" (tokenizer and indexer) and "maelmo_wordpiece_mismatched".
from maelmo_plugin.common import wordpiece, wordpiece_mismatched  # noqa: F401
