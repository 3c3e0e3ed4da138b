"""
maelmo_plugin: Masked ELMo (Senay & Salin, 2020, https://arxiv.org/abs/2010.04302) for AllenNLP.

Importing this package registers every component with AllenNLP, so that `"type"` names in a config
resolve. AllenNLP imports it through `.allennlp_plugins` (in the working directory) or
`--include-package maelmo_plugin`.
"""

# The warning filters must be installed before allennlp (and so fairscale) is imported.
from maelmo_plugin import _quiet  # noqa: F401  isort:skip
from maelmo_plugin import compat
from maelmo_plugin.version import VERSION as __version__  # noqa: F401

compat.apply_all()

# Every sub-package that registers a class is imported here, so that AllenNLP finds the names (after the shims).
from maelmo_plugin import commands, common, glue, lm, tagging, training  # noqa: E402,F401
from maelmo_plugin.hf import auto  # noqa: E402,F401  the export's classes, for transformers' Auto factories
