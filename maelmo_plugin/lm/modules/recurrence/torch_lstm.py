"""
The projected LSTM layer as torch runs it: cuDNN's fused recurrence on a GPU, ATen's per-step loop on a CPU.
"""

from typing import Optional

import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from maelmo_plugin.lm.modules.recurrence.layer import LayerState


def torch_lstm(
    lstm: torch.nn.LSTM,
    inputs: torch.Tensor,
    lengths: Optional[torch.Tensor] = None,
    state: Optional[LayerState] = None,
) -> tuple[torch.Tensor, LayerState]:
    """
    `lstm(inputs, state)`, packed where rows are padded. Arguments and results as `cpu_bidirectional_lstm`'s
    (`cpu.py`).
    """
    if lengths is None:
        # No padding, so no packing: packing sorts and copies the batch and its outputs, for nothing here.
        outputs, final_state = lstm(inputs, state)
        return outputs, final_state
    # Packing makes the backward direction start at each row's last real token, not at padding.
    packed = pack_padded_sequence(inputs, lengths.cpu(), batch_first=True, enforce_sorted=False)
    packed_outputs, final_state = lstm(packed, state)
    outputs, _ = pad_packed_sequence(packed_outputs, batch_first=True, total_length=inputs.size(1))
    return outputs, final_state
