"""What the biLSTM encoders share: the per-layer state, the cell choices, and reversing rows in time."""
from typing import Optional, Tuple

import torch

# (h, c) of one layer, in nn.LSTM's layout: h (2, batch, projection), c (2, batch, cells); index 0 is the
# forward direction.
LayerState = Tuple[torch.Tensor, torch.Tensor]

# "fused": torch's nn.LSTM(proj_size=...), unclipped; "elmo": AllenNLP's clipped LstmCellWithProjection.
CELLS = ("fused", "elmo")
# How the fused cell starts: torch's uniform, or as ELMo's cell (block-orthogonal, forget-gate bias 1).
INITIALIZATIONS = ("torch", "elmo")


def reversal_index(lengths: torch.Tensor, num_steps: int) -> torch.Tensor:
    """
    Shape (num_steps, batch_size): for each row, the time index that reverses its first `length` steps and
    leaves its padding in place, so that a reversed row is still left-aligned. It is its own inverse:

        row  [a b c d]  length 4  ->  [d c b a]
        row  [a b _ _]  length 2  ->  [b a _ _]
    """
    steps = torch.arange(num_steps, device=lengths.device).unsqueeze(1)
    return torch.where(steps < lengths, lengths - 1 - steps, steps)


def reverse_in_time(tensor: torch.Tensor, reversal: Optional[torch.Tensor], time_dim: int) -> torch.Tensor:
    """
    Reverses each row of `tensor` in time within its length, given `reversal_index()` (`None`: every row is
    full, a plain flip). `time_dim` is 0 for time-major (T, B, ...) tensors and 1 for batch-major (B, T, ...).
    """
    if reversal is None:
        return tensor.flip(time_dim)
    index = reversal if time_dim == 0 else reversal.t()
    index = index.reshape(*index.shape, *([1] * (tensor.dim() - 2))).expand_as(tensor)
    return tensor.gather(time_dim, index)
