from maelmo_plugin.data.data_loaders.btbptt import BtbpttDataLoader  # noqa: F401
