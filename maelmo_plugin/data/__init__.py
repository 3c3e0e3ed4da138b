# Importing these modules registers their classes ("maelmo_wordpiece", "maelmo_wordpiece_mismatched",
# "maelmo_mlm_corpus", "maelmo_btbptt") with AllenNLP.
from maelmo_plugin.data import (
    data_loaders,  # noqa: F401
    dataset_readers,  # noqa: F401
    wordpiece,  # noqa: F401
    wordpiece_mismatched,  # noqa: F401
)
