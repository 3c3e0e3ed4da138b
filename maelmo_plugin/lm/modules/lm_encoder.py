"""
What a word-piece language model asks of its encoder, as a registrable base: a config chooses the encoder
by its `"type"`, as allennlp-models' `MaskedLanguageModel` chooses its `contextualizer`.
"""

import abc
from typing import TYPE_CHECKING, Any, Optional, Protocol, runtime_checkable

import torch
from allennlp.common import Params, Registrable
from allennlp.common.checks import ConfigurationError
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder

from maelmo_plugin.lm.modules.recurrence import LayerState

LmEncoderOutput = tuple[list[torch.Tensor], Optional[list[LayerState]]]


class LmEncoder(torch.nn.Module, Registrable, abc.ABC):
    """
    An encoder of word-piece embeddings (batch_size, num_tokens, `get_input_dim()`) into the L + 1
    representations h_0 ... h_L (h_0 from the embeddings themselves), each (batch_size, num_tokens,
    `get_output_dim()`), L being `num_layers`. `mask` is a bool tensor (batch_size, num_tokens), False at
    padding.

    `initial_states` are the states a stateful encoder (the biLSTMs) starts the window from, one
    `LayerState` per layer, `None` for zeros; it returns the states it ends the window with, in the same
    layout, for the next window. An encoder that carries no states (`carries_states` False: the
    transformer) takes `None` and returns `None`, and its language model reads every window on its own.

    The built-in encoders register under it: "maelmo_masked_elmo", "maelmo_elmo_bilm" and
    "maelmo_transformer". A config may also name any AllenNLP `Seq2SeqEncoder` by its own type (`lstm`,
    `pytorch_transformer`, ...): `from_params` builds it and wraps it in "maelmo_seq2seq"
    (`seq2seq_lm_encoder.py`). Not registered itself.
    """

    # Whether the encoder carries states from one window to the next (BTBPTT).
    carries_states: bool = True
    # Whether the top layer's first half sees only the left context and its second half only the right one,
    # as the ELMo biLM's objective needs (its two LSTM stacks); Masked ELMo's layer 2 reads both directions.
    independent_directions: bool = False

    @abc.abstractmethod
    def get_input_dim(self) -> int:
        """The embedding size the encoder reads."""

    @abc.abstractmethod
    def get_output_dim(self) -> int:
        """The size of each representation h_0 ... h_L."""

    @property
    @abc.abstractmethod
    def num_layers(self) -> int:
        """L: the representations are h_0 ... h_L."""

    @abc.abstractmethod
    def forward(
        self,
        embeddings: torch.Tensor,
        mask: torch.Tensor,
        initial_states: Optional[list[LayerState]] = None,
    ) -> LmEncoderOutput:
        """The L + 1 representations, and the final states (None where the encoder carries none)."""

    def output_head_config(self) -> Any:
        """
        The `transformers` configuration of BERT's prediction-head transform over this encoder's output
        (`output_transform: "bert"`): its size, activation, LayerNorm epsilon and initialisation range.
        BERT's defaults at `get_output_dim()`; an encoder built on a `transformers` model gives its own.
        """
        from transformers import BertConfig  # the masked LM's BERT head needs transformers anyway

        return BertConfig(hidden_size=self.get_output_dim())

    @property
    def configured_type(self) -> str:
        """The `"type"` a config names this encoder by, as messages name it (not its Python class)."""
        return f'"{registered_name(LmEncoder, type(self))}"'

    @classmethod
    def from_params(
        cls,
        params: Params,
        constructor_to_call: Any = None,
        constructor_to_inspect: Any = None,
        **extras: Any,
    ) -> Any:
        """
        An encoder by its registered type: an `LmEncoder`'s, or an AllenNLP `Seq2SeqEncoder`'s own (`"lstm"`),
        which the language model wraps (`maelmo_seq2seq`). The door stays a type, not a wrapper config such as
        `{type: "maelmo_seq2seq", encoder: {...}}`: a researcher names the encoder as AllenNLP names it
        everywhere else, and an arena file's arm (docs/encoders.md#the-arena) is the encoder block alone.
        """
        name = params.get("type") if isinstance(params, Params) else None
        if cls is LmEncoder and isinstance(name, str) and name not in LmEncoder.list_available():
            if name not in Seq2SeqEncoder.list_available():
                raise ConfigurationError(
                    f"model.encoder.type {name!r} is neither a language model encoder "
                    f"({', '.join(LmEncoder.list_available())}) nor an AllenNLP Seq2SeqEncoder "
                    f"({', '.join(Seq2SeqEncoder.list_available())}): use one of them, or register yours "
                    f"(docs/encoders.md)."
                )
            try:
                encoder = Seq2SeqEncoder.from_params(params=params, **extras)
            except (AssertionError, ValueError, TypeError, RuntimeError) as error:
                # torch's and AllenNLP's own checks of the parameters (heads that do not divide the size, a
                # negative size): one line naming the encoder, so that `allennlp train` removes the run folder.
                first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                raise ConfigurationError(
                    f"model.encoder ({name!r}, an AllenNLP Seq2SeqEncoder) cannot be built from its parameters: "
                    f"{first}. Fix them (see {name!r}'s own documentation)."
                ) from None
            # By the registry, not an import: the wrapper's module imports this one.
            return LmEncoder.by_name("maelmo_seq2seq")(encoder=encoder)
        return super().from_params(
            params=params,
            constructor_to_call=constructor_to_call,
            constructor_to_inspect=constructor_to_inspect,
            **extras,
        )

    if TYPE_CHECKING:
        # Callers call the module, which runs `forward` behind torch's hooks: typed here as `forward` is,
        # since torch types every module's call as `(...) -> Any`.
        def __call__(
            self,
            embeddings: torch.Tensor,
            mask: torch.Tensor,
            initial_states: Optional[list[LayerState]] = None,
            **kwargs: Any,
        ) -> LmEncoderOutput: ...


def registered_name(base: type, subclass: type) -> str:
    """The name `subclass` is registered by under the registrable `base`, else its class name."""
    for name, (registered, _constructor) in Registrable._registry.get(base, {}).items():
        if registered is subclass:
            return name
    return subclass.__name__


@runtime_checkable
class ReducedPrecisionLmEncoder(Protocol):
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
    ) -> LmEncoderOutput: ...
