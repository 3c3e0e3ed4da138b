"""
Every form of the projected biLSTM layer, and the one function that chooses among them (`choice.py`, whose
docstring is this folder's map). This is the recurrence's one door: the encoders and the exports import what
they need of it from here, and the files of this folder import each other by their own names.
"""

from maelmo_plugin.lm.modules.recurrence.choice import Recurrence, choose_recurrence, needs_gradients
from maelmo_plugin.lm.modules.recurrence.cuda_graphs import GraphedRecurrence
from maelmo_plugin.lm.modules.recurrence.layer import (
    LayerState,
    direction_parameters,
    reversal_index,
    reverse_in_time,
)
from maelmo_plugin.lm.modules.recurrence.reduced_precision import PRODUCTS, resolve_precision
from maelmo_plugin.lm.modules.recurrence.standalone import standalone_source

__all__ = [
    "PRODUCTS",
    "GraphedRecurrence",
    "LayerState",
    "Recurrence",
    "choose_recurrence",
    "direction_parameters",
    "needs_gradients",
    "resolve_precision",
    "reversal_index",
    "reverse_in_time",
    "standalone_source",
]
