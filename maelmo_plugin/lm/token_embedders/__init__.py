from maelmo_plugin.lm.token_embedders.masked_elmo_embedder import MaskedElmoTokenEmbedder  # noqa: F401
from maelmo_plugin.lm.token_embedders.masked_elmo_mismatched_embedder import MaskedElmoMismatchedEmbedder  # noqa: F401
from maelmo_plugin.lm.token_embedders.stateless_elmo import StatelessElmoTokenEmbedder  # noqa: F401
