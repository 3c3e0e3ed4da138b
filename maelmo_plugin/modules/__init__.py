from maelmo_plugin.modules.masked_elmo_encoder import MaskedElmoEncoder  # noqa: F401
