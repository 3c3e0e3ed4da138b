"""The language models: corpus reader and BTBPTT loader, masking, encoders, models, embedders, predictors."""

from maelmo_plugin.lm import (  # noqa: F401
    data_loaders,
    dataset_readers,
    models,
    predictors,
    token_embedders,
)

# After `models`, not from it: `maelmo_pretrained_lm` opens an archive through `loading.py`, which builds the
# models above (see `models/__init__.py`).
from maelmo_plugin.lm.models import pretrained_lm  # noqa: F401
