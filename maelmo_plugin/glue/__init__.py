# Importing these modules registers their classes ("maelmo_glue" reader and metric) with AllenNLP.
from maelmo_plugin.glue import (
    dataset_readers,  # noqa: F401
    metrics,  # noqa: F401
)
