"""
What a word-piece language model asks of its encoder: the contract that `MaskedElmoEncoder`,
`ElmoBiLmEncoder` and `TransformerEncoder` share, written as typing `Protocol`s so that mypy checks both
the encoders and the models that call them (a plain `torch.nn.Module` attribute types every call as Any).
"""

from typing import Optional, Protocol, runtime_checkable

import torch

from maelmo_plugin.lm.modules.recurrence.cpu import LayerState


class LmEncoder(Protocol):
    """
    An encoder of word-piece embeddings (batch_size, num_tokens, `get_input_dim()`) into the L + 1
    representations h_0 ... h_L (h_0 from the embeddings themselves), each (batch_size, num_tokens,
    `get_output_dim()`), L being `num_layers`. `mask` is a bool tensor (batch_size, num_tokens), False at
    padding.

    `initial_states` are the states a stateful encoder (the biLSTMs) starts the window from, one
    `LayerState` per layer, `None` for zeros; it returns the states it ends the window with, in the same
    layout, for the next window. A stateless encoder (the transformer) takes `None` and returns `None`.
    """

    def get_input_dim(self) -> int: ...

    def get_output_dim(self) -> int: ...

    @property
    def num_layers(self) -> int: ...

    def forward(
        self,
        embeddings: torch.Tensor,
        mask: torch.Tensor,
        initial_states: Optional[list[LayerState]] = None,
    ) -> tuple[list[torch.Tensor], Optional[list[LayerState]]]: ...

    # Callers call the module, which runs `forward` behind torch's hooks: typed here as `forward` is, since
    # torch types every module's call as `(...) -> Any`.
    def __call__(
        self,
        embeddings: torch.Tensor,
        mask: torch.Tensor,
        initial_states: Optional[list[LayerState]] = None,
    ) -> tuple[list[torch.Tensor], Optional[list[LayerState]]]: ...


@runtime_checkable
class ReducedPrecisionLmEncoder(LmEncoder, Protocol):
    """
    An `LmEncoder` that can also run its products in a reduced precision for inference (`MaskedElmoEncoder`:
    int8 or bfloat16 on a CPU), where `reduced_precision_refusal(device)` is None.
    """

    def reduced_precision_refusal(self, device: torch.device) -> Optional[str]: ...

    def __call__(
        self,
        embeddings: torch.Tensor,
        mask: torch.Tensor,
        initial_states: Optional[list[LayerState]] = None,
        precision: str = "fp32",
    ) -> tuple[list[torch.Tensor], Optional[list[LayerState]]]: ...
