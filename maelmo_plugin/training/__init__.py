from maelmo_plugin.training.throughput_callback import ThroughputCallback  # noqa: F401
