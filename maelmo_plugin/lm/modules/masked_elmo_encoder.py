"""
The Masked ELMo encoder (paper section 2.1): L fully contextual biLSTM layers over word-piece embeddings.

    h_0 = embeddings                                             (B, T, d)
    h_l = [LayerNorm(fwd_l(h_{l-1})) ; LayerNorm(bwd_l(h_{l-1}))] + h_{l-1}      for l = 1..L

Each direction is an LSTM with `cells` memory cells whose state is projected to d/2 (section 2.2). The cell
is torch's fused `nn.LSTM(proj_size=...)`, which does not clip the cell state: the only difference from
ELMo's cell, which the paper reports as 20% faster at equal or lower perplexity. Its parameters run through
one of the forms of `recurrence/`, which `choose_recurrence` picks for each call and says why: cuDNN on a
GPU; on a CPU the project's own recurrence, which computes the same values and gradients faster than
torch's CPU kernel (docs/performance.md), or, when nothing needs gradients, its forward-only twin, which
keeps no activations, computes no padding, and can run its products in int8 or bfloat16 (`precision`).
Both directions of a layer run in one call, and layer l > 1 reads both directions of layer l-1, so from
layer 2 on every position sees its whole context.

`cell="elmo"` swaps in ELMo's own cell (AllenNLP's `LstmCellWithProjection`, which clips the cell state
and the projected state, at 3 in ELMo) for the ablation of section 2.2; everything else stays the same.
"""

from typing import Optional, Union, cast

import torch
from allennlp.common.checks import ConfigurationError

from maelmo_plugin.lm.modules.bilstm import INITIALIZATIONS, BiLstmEncoder, BiLstmOptions
from maelmo_plugin.lm.modules.lm_encoder import LmEncoder
from maelmo_plugin.lm.modules.recurrence import (
    PRODUCTS,
    ElmoCellPair,
    GraphedRecurrence,
    LayerState,
    RecurrenceOptions,
    choose_recurrence,
    elmo_initialization,
    needs_gradients,
)


class PerDirectionLayerNorm(torch.nn.Module):
    """
    LayerNorm applied to each direction's half of a biLSTM output separately, each with its own gain and
    bias (paper 2.1: it makes the two directions' outputs uniform before they are concatenated). One module
    and one kernel for both halves, instead of two LayerNorms and a concatenation.
    """

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self.weight = torch.nn.Parameter(torch.ones(2, size))
        self.bias = torch.nn.Parameter(torch.zeros(2, size))

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        # Shape: (..., 2, size): [..., 0, :] is the forward direction, [..., 1, :] the backward one
        halves = inputs.unflatten(-1, (2, self.size))
        normalized = torch.nn.functional.layer_norm(halves, (self.size,)) * self.weight + self.bias
        return normalized.flatten(-2)


class BiLstmLayer(torch.nn.Module):
    """
    One biLSTM layer: bidirectional LSTM with projection (torch's fused one or ELMo's cell, run by the form of
    `recurrence/` that `choose_recurrence` picks), per-direction LayerNorm, skip connection.
    """

    def __init__(
        self,
        options: BiLstmOptions,
        cpu_recurrence: bool = True,
        initialization: str = "torch",
        cuda_graphs: bool = False,
    ) -> None:
        super().__init__()
        dim = options.input_dim
        self.recurrence = RecurrenceOptions(cpu_recurrence, GraphedRecurrence(enabled=cuda_graphs))
        self.dropout = torch.nn.Dropout(options.dropout)
        self.lstm: Union[torch.nn.LSTM, ElmoCellPair]
        if options.cell == "fused":
            self.lstm = torch.nn.LSTM(
                dim, options.cells, proj_size=dim // 2, batch_first=True, bidirectional=True
            )
            if initialization == "elmo":
                elmo_initialization(self.lstm)
        else:
            self.lstm = ElmoCellPair(dim, dim // 2, options.cells, options.cell_clip, options.projection_clip)
        self.norm = PerDirectionLayerNorm(dim // 2)

    def forward(
        self,
        inputs: torch.Tensor,
        lengths: Optional[torch.Tensor],
        state: Optional[LayerState],
        precision: str = "fp32",
    ) -> tuple[torch.Tensor, LayerState]:
        # The skip connection adds the clean input; only the LSTM reads the dropped-out copy.
        lstm_inputs = self.dropout(inputs)
        recurrence = choose_recurrence(self.lstm, lstm_inputs, lengths, state, precision, self.recurrence)
        outputs, final_state = recurrence(self.lstm, lstm_inputs, lengths, state)
        # Shape: (batch_size, num_tokens, dim): [LayerNorm(forward) ; LayerNorm(backward)] + input
        return self.norm(outputs) + inputs, final_state


@LmEncoder.register("maelmo_masked_elmo")
class MaskedElmoEncoder(BiLstmEncoder):
    """
    The stack of fully contextual biLSTM layers of Masked ELMo (Senay & Salin, 2020).

    It is stateless by itself: callers that train with truncated BPTT pass the states it returned for the
    previous window (`initial_states`) and detach them between windows.

    Registered as a `LmEncoder` with name "maelmo_masked_elmo".

    # Parameters

    cpu_recurrence : `bool`, optional (default = `True`)
        Only for `cell="fused"` on a CPU: run the layers through `cpu_bidirectional_lstm` (same parameters,
        values and gradients as `nn.LSTM`, weight gradients batched over time, oneDNN's packed products)
        rather than torch's CPU LSTM. It has no effect on a GPU, where cuDNN runs the recurrence; `False`
        is there to compare the two.
    initialization : `str`, optional (default = `"torch"`)
        Only for `cell="fused"`: `"torch"` keeps nn.LSTM's uniform initialisation; `"elmo"` starts it as
        ELMo's cell starts (`elmo_initialization`), so that the two cells can be compared at equal
        initialisation.
    cuda_graphs : `bool`, optional (default = `False`)
        Only for `cell="fused"` on a GPU, in training: replay each layer's LSTM, forward and backward, from a
        CUDA graph captured for the pre-training window's shape, so that the GPU does not wait on the
        launches of cuDNN's per-step kernels (`recurrence/cuda_graphs.py`). Other shapes, batches with padding
        and inference run eagerly, with the same results. Off by default until its `gpu` tests have run on a
        GPU (`scripts/gpu_checks.sh`).
    **options
        `BiLstmEncoder`'s (`bilstm.py`): `input_dim`, `cells`, `num_layers`, `dropout`, `cell`, `cell_clip`,
        `projection_clip`. Here `input_dim` is d, the word-piece embedding size, which every layer keeps (each
        direction outputs d/2, and must be whole; the paper has 4096 cells for d = 768); `dropout` is on each
        layer's input (the paper states none); `cell="elmo"` is the ablation of section 2.2, initialised as
        ELMo's cell (block-orthogonal gates, forget-gate bias 1).
    """

    def __init__(
        self,
        cpu_recurrence: bool = True,
        initialization: str = "torch",
        cuda_graphs: bool = False,
        **options,
    ) -> None:
        super().__init__(**options)
        input_dim = self.options.input_dim
        if initialization not in INITIALIZATIONS:
            raise ConfigurationError(
                f"model.encoder.initialization must be one of {INITIALIZATIONS}, got {initialization!r}."
            )
        if input_dim % 2:
            raise ConfigurationError(
                f"model.encoder.input_dim must be even (each direction outputs input_dim / 2), got "
                f"{input_dim}: use {input_dim + 1}, for example."
            )
        self.check_projection(input_dim // 2, "input_dim / 2", "the paper has 4096 cells for input_dim 768")
        self.layers = torch.nn.ModuleList(
            BiLstmLayer(self.options, cpu_recurrence, initialization, cuda_graphs)
            for _ in range(self.options.num_layers)
        )

    def reduced_precision_refusal(self, device: torch.device) -> Optional[str]:
        """Why `forward` cannot run with `precision` "int8" or "bf16" on `device`, or None if it can."""
        if self.options.cell != "fused":
            return f"this encoder has the {self.options.cell!r} cell"
        if device.type != "cpu":
            return f"the model is on {device} (cuDNN runs the recurrence there)"
        if not all(layer.recurrence.cpu_recurrence for layer in self.bilstm_layers):
            return "this encoder has cpu_recurrence False"
        return None

    def get_output_dim(self) -> int:
        return self.options.input_dim

    @property
    def bilstm_layers(self) -> list[BiLstmLayer]:
        """`layers`, typed: a `ModuleList` types its items as plain modules, and the constructor fills it."""
        return cast(list[BiLstmLayer], list(self.layers))

    def forward(
        self,
        embeddings: torch.Tensor,
        mask: Optional[torch.Tensor] = None,
        initial_states: Optional[list[LayerState]] = None,
        precision: str = "fp32",
    ) -> tuple[list[torch.Tensor], list[LayerState]]:
        """
        # Parameters

        embeddings, mask
            As `LmEncoder` says (`lm_encoder.py`); `mask` may be None (no padding). Rows must be left-aligned.
        initial_states : `List[LayerState]`, optional
            One (h, c) per layer, shapes (2, batch_size, input_dim / 2) and (2, batch_size, cells); zeros if
            not given.
        precision : `str`, optional (default = `"fp32"`)
            `"int8"` or `"bf16"`: the LSTM's products in that precision (`recurrence/reduced_precision.py`),
            for inference on a CPU only (under `torch.no_grad()` or `torch.inference_mode()`).

        # Returns

        representations : `List[torch.Tensor]`
            The L + 1 representations h_0 ... h_L, each (batch_size, num_tokens, input_dim), zero at padding.
        final_states : `List[LayerState]`
            Each layer's (h, c) after the window: index 0 the forward direction at the last real token,
            index 1 the backward direction at the first token.
        """
        if precision != "fp32":
            self._check_reduced_precision(precision, embeddings)
        lengths = None
        keep = None
        if mask is not None and not bool(mask.all()):
            lengths = mask.sum(dim=1).clamp(min=1)
            # Shape: (batch_size, num_tokens, 1), zero at padding
            keep = mask.unsqueeze(-1).to(embeddings.dtype)
        states = initial_states if initial_states is not None else [None] * self.num_layers
        representations = [embeddings]
        final_states = []
        for layer, state in zip(self.layers, states):
            output, final_state = layer(representations[-1], lengths, state, precision)
            representations.append(output)
            final_states.append(final_state)
        if keep is not None:
            representations = [representation * keep for representation in representations]
        return representations, final_states

    def _check_reduced_precision(self, precision: str, embeddings: torch.Tensor) -> None:
        if precision not in PRODUCTS:
            raise ValueError(f"precision must be one of {sorted(PRODUCTS)}, got {precision!r}.")
        refusal = self.reduced_precision_refusal(embeddings.device)
        if refusal is not None:
            raise ValueError(f"precision {precision!r} is not available: {refusal}.")
        if any(needs_gradients(layer.lstm, embeddings, None) for layer in self.bilstm_layers):
            raise ValueError(
                f"precision {precision!r} is for inference: run the encoder under torch.no_grad() or "
                f"torch.inference_mode()."
            )
