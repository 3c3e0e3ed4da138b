from maelmo_plugin.models.masked_elmo_lm import MaskedElmoLanguageModel  # noqa: F401
