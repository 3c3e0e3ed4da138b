"""
What every form of the projected biLSTM layer shares, and what the encoders and the ONNX export read from
one: the layer's state (`LayerState`), its parameters per direction, and the reversal of rows in time.

Like `cpu.py`, this file imports only torch: the Hugging Face export ships the two as one file
(`standalone.py`).
"""

from typing import Optional

import torch

# (h, c) of one layer, in nn.LSTM's layout: h (2, batch, projection), c (2, batch, cells); index 0 is the
# forward direction.
LayerState = tuple[torch.Tensor, torch.Tensor]


def direction_parameters(lstm: torch.nn.LSTM, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """nn.LSTM's parameter `name` of its layer, forward and backward (torch names them at run time)."""
    return lstm.get_parameter(f"{name}_l0"), lstm.get_parameter(f"{name}_l0_reverse")


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
