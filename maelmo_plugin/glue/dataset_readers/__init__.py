from maelmo_plugin.glue.dataset_readers.glue import GlueReader  # noqa: F401
