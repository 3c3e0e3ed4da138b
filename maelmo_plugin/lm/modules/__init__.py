from maelmo_plugin.lm.modules.elmo_bilm_encoder import ElmoBiLmEncoder  # noqa: F401
from maelmo_plugin.lm.modules.masked_elmo_encoder import MaskedElmoEncoder  # noqa: F401
from maelmo_plugin.lm.modules.seq2seq_lm_encoder import Seq2SeqLmEncoder  # noqa: F401
from maelmo_plugin.lm.modules.transformer_encoder import TransformerEncoder  # noqa: F401
