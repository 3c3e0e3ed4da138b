from maelmo_plugin.lm.dataset_readers.mlm_corpus import MlmCorpusReader  # noqa: F401
