from maelmo_plugin.lm.models.elmo_lm import ElmoLanguageModel  # noqa: F401
from maelmo_plugin.lm.models.masked_elmo_lm import MaskedElmoLanguageModel  # noqa: F401
from maelmo_plugin.lm.models.pretrained_lm import PretrainedLanguageModel  # noqa: F401
