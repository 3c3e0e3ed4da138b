"""The language models: corpus reader and BTBPTT loader, masking, encoders, models, embedders, predictors."""

from maelmo_plugin.lm import (  # noqa: F401
    data_loaders,
    dataset_readers,
    models,
    predictors,
    token_embedders,
)
