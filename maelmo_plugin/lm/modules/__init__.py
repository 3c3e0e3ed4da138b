from maelmo_plugin.lm.modules.elmo_bilm_encoder import ElmoBiLmEncoder  # noqa: F401
from maelmo_plugin.lm.modules.masked_elmo_encoder import MaskedElmoEncoder  # noqa: F401
