from maelmo_plugin.tagging.predictors.sentence_tagger import SentenceTaggerPredictor  # noqa: F401
