from maelmo_plugin.models.elmo_lm import ElmoLanguageModel  # noqa: F401
from maelmo_plugin.models.masked_elmo_lm import MaskedElmoLanguageModel  # noqa: F401
from maelmo_plugin.models.glue_classifier import GlueClassifier  # noqa: F401
