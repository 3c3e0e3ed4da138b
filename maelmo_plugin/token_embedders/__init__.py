from maelmo_plugin.token_embedders.masked_elmo_embedder import MaskedElmoTokenEmbedder  # noqa: F401
