from maelmo_plugin.lm.data_loaders.btbptt import BtbpttDataLoader  # noqa: F401
