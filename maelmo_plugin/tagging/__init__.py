"""Sequence tagging with the embedders (the models are allennlp-models' own), and a CoNLL-2003 reader."""

from maelmo_plugin.tagging import dataset_readers, predictors  # noqa: F401
