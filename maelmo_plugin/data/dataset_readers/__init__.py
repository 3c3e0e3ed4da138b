from maelmo_plugin.data.dataset_readers.mlm_corpus import MlmCorpusReader  # noqa: F401
