# Importing the modules registers their `Predictor`s with AllenNLP.
from maelmo_plugin.predictors.fill_mask import FillMaskPredictor  # noqa: F401
from maelmo_plugin.predictors.glue import GluePredictor  # noqa: F401
from maelmo_plugin.predictors.representations import RepresentationsPredictor  # noqa: F401
from maelmo_plugin.predictors.sentence_tagger import SentenceTaggerPredictor  # noqa: F401
