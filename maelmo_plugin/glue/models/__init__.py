from maelmo_plugin.glue.models.glue_classifier import GlueClassifier  # noqa: F401
