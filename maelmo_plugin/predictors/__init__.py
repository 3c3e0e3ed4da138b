from maelmo_plugin.predictors.glue import GluePredictor  # noqa: F401
