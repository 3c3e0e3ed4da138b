from maelmo_plugin.lm.predictors.fill_mask import FillMaskPredictor  # noqa: F401
from maelmo_plugin.lm.predictors.representations import RepresentationsPredictor  # noqa: F401
