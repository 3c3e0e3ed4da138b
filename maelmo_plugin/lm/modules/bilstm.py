"""What the biLSTM encoders share: the per-layer state, the cell choices, and reversing rows in time."""

# The layer state and the reversal in time are defined in cpu_lstm_recurrence.py, which the Hugging Face
# export ships alone and which may therefore import only torch.
from maelmo_plugin.lm.modules.cpu_lstm_recurrence import LayerState, reversal_index, reverse_in_time

__all__ = ["CELLS", "INITIALIZATIONS", "LayerState", "reversal_index", "reverse_in_time"]

# "fused": torch's nn.LSTM(proj_size=...), unclipped; "elmo": AllenNLP's clipped LstmCellWithProjection.
CELLS = ("fused", "elmo")
# How the fused cell starts: torch's uniform, or as ELMo's cell (block-orthogonal, forget-gate bias 1).
INITIALIZATIONS = ("torch", "elmo")
