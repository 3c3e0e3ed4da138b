from maelmo_plugin.glue.predictors.glue import GluePredictor  # noqa: F401
