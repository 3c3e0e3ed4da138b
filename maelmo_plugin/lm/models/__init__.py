# The models of the language-model family. `pretrained_lm.py` (`maelmo_pretrained_lm`) is registered by
# `maelmo_plugin/lm/__init__.py` instead: it opens archives through `lm/loading.py`, which builds these models,
# so importing it here would make an import loop (this package -> pretrained_lm -> loading -> this package).
from maelmo_plugin.lm.models.elmo_lm import ElmoLanguageModel  # noqa: F401
from maelmo_plugin.lm.models.masked_elmo_lm import MaskedElmoLanguageModel  # noqa: F401
