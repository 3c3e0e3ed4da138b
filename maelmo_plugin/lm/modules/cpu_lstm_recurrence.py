"""
The CPU recurrence's module path up to 0.1.0, kept for the files users already have: a Hugging Face model
re-saved with the plugin imported ships a `cpu_lstm_recurrence.py` that imports from here
(docs/hf_export.md), and must keep loading. The recurrence is defined in `recurrence/cpu.py`; nothing in
the plugin imports this module.
"""

from maelmo_plugin.lm.modules.recurrence.cpu import cpu_bidirectional_lstm

__all__ = ["cpu_bidirectional_lstm"]
