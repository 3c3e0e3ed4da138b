"""GLUE: the task table, reader, classifier with its heads, metric and predictor."""

from maelmo_plugin.glue import (  # noqa: F401
    dataset_readers,
    metrics,
    models,
    predictors,
)
