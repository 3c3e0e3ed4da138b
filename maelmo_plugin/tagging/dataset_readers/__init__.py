from maelmo_plugin.tagging.dataset_readers.conll2003 import Conll2003Reader  # noqa: F401
