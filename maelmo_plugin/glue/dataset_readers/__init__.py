from maelmo_plugin.glue.dataset_readers.glue import GlueReader, GlueTask, resolve_glue_task  # noqa: F401
