"""
LSTM states carried from one truncated-BPTT window to the next, per row of the batch.

A state is any nested tuple/list of tensors whose dimension 1 is the batch (torch's LSTM layout:
(directions, batch, size)), so both the Masked ELMo encoder and the ELMo baseline use this helper.
"""

from typing import Any, Optional

import torch


def map_states(function, states: Any) -> Any:
    """Applies `function` to every tensor of a nested tuple/list of states."""
    if states is None:
        return None
    if isinstance(states, torch.Tensor):
        return function(states)
    return type(states)(map_states(function, part) for part in states)


def repeat_states(states: Any, times: int) -> Any:
    """The states of a batch for `times` stacked copies of it (rows copy-major, as `Tensor.repeat`)."""
    return map_states(lambda tensor: tensor.repeat(1, times, *([1] * (tensor.dim() - 2))), states)


def first_rows(states: Any, batch_size: int) -> Any:
    return map_states(lambda tensor: tensor[:, :batch_size], states)


class CarriedStates:
    """
    Keeps the final states of the last window for every row and hands them to the next window.

    Starting each batch, we detach the hidden state from how it was previously produced. If we didn't,
    the model would try backpropagating all the way to the start of the stream (pytorch/examples'
    word_language_model). Rows flagged in `reset` (a new stream starts there, e.g. at an epoch's first
    window) start from zeros, which is what `None` means to the LSTMs.
    """

    def __init__(self) -> None:
        self.states: Any = None

    def initial(self, reset: torch.Tensor) -> Optional[Any]:
        """The initial states for a batch of `len(reset)` rows; `None` when every row starts afresh."""
        if self.states is None or bool(reset.all()):
            return None
        keep = (~reset).to(dtype=torch.float)

        def zero_reset_rows(tensor: torch.Tensor) -> torch.Tensor:
            if tensor.size(1) != len(reset):
                raise ValueError(
                    f"The carried states hold {tensor.size(1)} rows but this batch has {len(reset)}: a "
                    f"stateful model needs the same rows in every batch (the maelmo_btbptt data loader)."
                )
            return tensor * keep.to(tensor.device).view(1, -1, *([1] * (tensor.dim() - 2)))

        return map_states(zero_reset_rows, self.states)

    def update(self, final_states: Any) -> None:
        self.states = map_states(torch.Tensor.detach, final_states)

    def clear(self) -> None:
        self.states = None
