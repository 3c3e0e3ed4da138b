"""
Every form of the projected biLSTM layer, and the one function that chooses among them (`choice.py`, whose
docstring is this folder's map). This is the recurrence's one door: the encoders and the exports import what
they need of it from here, and the files of this folder import each other by their own names.
"""

from maelmo_plugin.lm.modules.recurrence.choice import (
    Recurrence,
    RecurrenceOptions,
    choose_recurrence,
    needs_gradients,
)
from maelmo_plugin.lm.modules.recurrence.cuda_graphs import GraphedRecurrence
from maelmo_plugin.lm.modules.recurrence.elmo_cell import ElmoCell, ElmoCellPair, elmo_initialization
from maelmo_plugin.lm.modules.recurrence.layer import (
    LayerState,
    direction_parameters,
    reversal_index,
    reverse_in_time,
)
from maelmo_plugin.lm.modules.recurrence.reduced_precision import PRODUCTS, resolve_precision
from maelmo_plugin.lm.modules.recurrence.standalone import standalone_source
from maelmo_plugin.lm.modules.recurrence.torch_lstm import torch_lstm

__all__ = [
    "PRODUCTS",
    "ElmoCell",
    "ElmoCellPair",
    "GraphedRecurrence",
    "LayerState",
    "Recurrence",
    "RecurrenceOptions",
    "choose_recurrence",
    "direction_parameters",
    "elmo_initialization",
    "needs_gradients",
    "resolve_precision",
    "reversal_index",
    "reverse_in_time",
    "standalone_source",
    "torch_lstm",
]
