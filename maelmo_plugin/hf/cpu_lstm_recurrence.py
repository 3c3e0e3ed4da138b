"""
The CPU recurrence under the name `modeling_masked_elmo.py` imports (`from .cpu_lstm_recurrence import ...`),
inside the plugin. It is defined once, in `maelmo_plugin/lm/modules/recurrence/cpu.py`: the export writes
that file and the two it imports, joined in one that imports only torch (`recurrence/standalone.py`), into
every export under this name, in place of this one (`maelmo_plugin/hf/export.py`), so that an export runs it
without the plugin.
"""

from maelmo_plugin.lm.modules.recurrence.cpu import cpu_bidirectional_lstm

__all__ = ["cpu_bidirectional_lstm"]
