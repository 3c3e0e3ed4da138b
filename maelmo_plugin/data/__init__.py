# Importing these modules registers their classes ("maelmo_wordpiece", "maelmo_mlm_corpus") with AllenNLP.
from maelmo_plugin.data import (
    dataset_readers,  # noqa: F401
    wordpiece,  # noqa: F401
)
