"""Sequence tagging with the embedders (the models are allennlp-models' own)."""
from maelmo_plugin.tagging import predictors  # noqa: F401
