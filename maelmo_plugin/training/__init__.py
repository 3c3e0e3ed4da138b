from maelmo_plugin.training.throughput_callback import ThroughputCallback  # noqa: F401
from maelmo_plugin.training.exact_resume import ExactResumeCallback  # noqa: F401
from maelmo_plugin.training.atomic_checkpointer import AtomicCheckpointer  # noqa: F401
