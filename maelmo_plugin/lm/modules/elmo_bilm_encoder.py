"""
The ELMo biLM (Peters et al., 2018, section 3 and 3.4) over word-piece embeddings: the baseline of Masked
ELMo's Table 4. Two independent stacks, one reading left to right and one right to left, with a residual
connection from layer 2 on:

    f_0 = b_0 = e                                              (B, T, P)  word-piece embeddings
    f_l = fwd_l(f_{l-1}) [+ f_{l-1} if l > 1]                  (B, T, P)  reads tokens 1 ... t
    b_l = bwd_l(b_{l-1}) [+ b_{l-1} if l > 1]                  (B, T, P)  reads tokens t ... n
    h_0 = [e ; e],  h_l = [f_l ; b_l]                          (B, T, 2P) the L + 1 representations

Unlike Masked ELMo, no layer ever mixes the two directions, and the token layer is duplicated to the
size of the others (Masked ELMo paper, 2.1).
"""

from typing import Optional, cast

import torch

from maelmo_plugin.lm.modules.bilstm import BiLstmEncoder
from maelmo_plugin.lm.modules.lm_encoder import LmEncoder
from maelmo_plugin.lm.modules.recurrence import (
    ElmoCell,
    LayerState,
    reversal_index,
    reverse_in_time,
    torch_lstm,
)


@LmEncoder.register("maelmo_elmo_bilm")
class ElmoBiLmEncoder(BiLstmEncoder):
    """
    The biLSTM of the ELMo language model (Peters et al., 2018, https://arxiv.org/abs/1802.05365): L layers
    per direction of `cells` memory cells projected to `input_dim`, residual connections between layers.

    It is stateless by itself: callers that train with truncated BPTT pass the states it returned for the
    previous window (`initial_states`) and detach them.

    Two implementations of the same network:

    * `"fused"`: one `nn.LSTM(P, cells, proj_size=P)` per layer and direction (cuDNN on GPU, native kernel
      on CPU), which does not clip (Masked ELMo paper, 2.2, suggests it for ELMo too). The backward
      direction runs forward over each row reversed within its length.
    * `"elmo"`: ELMo's own cell, AllenNLP's `LstmCellWithProjection` (clipping the cell and the projected
      state at 3), in the same stacks (`maelmo_plugin.lm.modules.recurrence.elmo_cell`); it is what `ElmoLstm`
      stacks, with states passed in and out like the fused cell's rather than kept inside the module.

    Registered as a `LmEncoder` with name "maelmo_elmo_bilm".

    # Parameters

    **options
        `BiLstmEncoder`'s (`bilstm.py`): `input_dim`, `cells`, `num_layers`, `dropout`, `cell`, `cell_clip`,
        `projection_clip`. Here `input_dim` is P, the word-piece embedding size and each direction's
        projection size (ELMo has 4096 cells for P = 512); `dropout` is on the embeddings the LSTMs read (the
        returned h_0 is not dropped out); `cell` is `"fused"` or `"elmo"` (see above).

    NOTE: bilm-tf drops out every layer's input; as AllenNLP's `ElmoLstm`, both cells here drop out only the
    first layer's input (the language model adds dropout on the
    top layer's output, as bilm-tf does).
    """

    independent_directions = True

    def __init__(self, **options) -> None:
        super().__init__(**options)
        size, cells = self.options.input_dim, self.options.cells
        self.check_projection(size, "input_dim", "ELMo has 4096 cells for a projection of 512")
        self.dropout = torch.nn.Dropout(self.options.dropout)

        def layer() -> torch.nn.Module:
            # The backward stack reads each row reversed, so its cells run forward too.
            if self.options.cell == "elmo":
                return ElmoCell(size, size, cells, self.options.cell_clip, self.options.projection_clip)
            return torch.nn.LSTM(size, cells, proj_size=size, batch_first=True)

        self.forward_layers, self.backward_layers = (
            torch.nn.ModuleList(layer() for _ in range(self.options.num_layers)) for _ in range(2)
        )

    def get_output_dim(self) -> int:
        return 2 * self.options.input_dim

    def forward(
        self,
        embeddings: torch.Tensor,
        mask: Optional[torch.Tensor] = None,
        initial_states: Optional[list[LayerState]] = None,
    ) -> tuple[list[torch.Tensor], list[LayerState]]:
        """
        # Parameters

        embeddings, mask
            As `LmEncoder` says (`lm_encoder.py`); `mask` may be None (no padding). Rows must be left-aligned.
        initial_states : `List[LayerState]`, optional
            One (h, c) per layer, shapes (2, batch_size, input_dim) and (2, batch_size, cells), index 0 the
            forward direction; zeros if not given.

        # Returns

        representations : `List[torch.Tensor]`
            h_0 = [e ; e], h_1 ... h_L = [forward_l ; backward_l], each (batch_size, num_tokens,
            2 * input_dim), zero at padding.
        final_states : `List[LayerState]`
            Each layer's (h, c) after the window: index 0 the forward direction at the last real token,
            index 1 the backward direction at the first token.
        """
        batch_size, num_tokens, _ = embeddings.shape
        if mask is None:
            lengths = torch.full((batch_size,), num_tokens, dtype=torch.long, device=embeddings.device)
        else:
            lengths = mask.sum(dim=1).clamp(min=1)
        inputs = self.dropout(embeddings)
        outputs, final_states = self._run(inputs, lengths, initial_states)
        # Shape: (batch_size, num_tokens, 2 * input_dim), ELMo duplicates the token layer
        representations = [torch.cat([embeddings, embeddings], dim=-1)] + outputs
        if mask is not None and not bool(mask.all()):
            keep = mask.unsqueeze(-1).to(embeddings.dtype)
            representations = [representation * keep for representation in representations]
        return representations, final_states

    def _run(
        self, inputs: torch.Tensor, lengths: torch.Tensor, initial_states: Optional[list[LayerState]]
    ) -> tuple[list[torch.Tensor], list[LayerState]]:
        padded = bool((lengths < inputs.size(1)).any())
        # The backward stack works on each row reversed within its length, from the first layer to the
        # last; only its outputs are turned back into reading order.
        forward_inputs = inputs
        reversal = reversal_index(lengths, inputs.size(1)) if padded else None
        backward_inputs = reverse_in_time(inputs, reversal, time_dim=1)
        states = initial_states if initial_states is not None else [None] * self.num_layers
        outputs, final_states = [], []
        for index, (forward_lstm, backward_lstm, state) in enumerate(
            zip(self.forward_layers, self.backward_layers, states)
        ):
            forward_state = backward_state = None
            if state is not None:
                forward_state = (state[0][:1].contiguous(), state[1][:1].contiguous())
                backward_state = (state[0][1:].contiguous(), state[1][1:].contiguous())
            # Shape: (batch_size, num_tokens, input_dim); states (1, batch_size, size)
            forward_outputs, (forward_h, forward_c) = self._run_lstm(
                forward_lstm, forward_inputs, lengths if padded else None, forward_state
            )
            backward_outputs, (backward_h, backward_c) = self._run_lstm(
                backward_lstm, backward_inputs, lengths if padded else None, backward_state
            )
            if index > 0:  # residual connection, as ElmoLstm: the layer's input is added to its output
                forward_outputs = forward_outputs + forward_inputs
                backward_outputs = backward_outputs + backward_inputs
            in_reading_order = reverse_in_time(backward_outputs, reversal, time_dim=1)
            # Shape: (batch_size, num_tokens, 2 * input_dim)
            outputs.append(torch.cat([forward_outputs, in_reading_order], dim=-1))
            # Shape: (2, batch_size, input_dim) and (2, batch_size, cells)
            final_states.append((torch.cat([forward_h, backward_h]), torch.cat([forward_c, backward_c])))
            forward_inputs, backward_inputs = forward_outputs, backward_outputs
        return outputs, final_states

    @staticmethod
    def _run_lstm(
        lstm: torch.nn.Module,
        inputs: torch.Tensor,
        lengths: Optional[torch.Tensor],
        state: Optional[tuple[torch.Tensor, torch.Tensor]],
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        if isinstance(lstm, ElmoCell):
            return lstm.run(inputs, lengths, state)
        # Packed where rows are padded: each row stops at its last real token, so the final state is taken there.
        return torch_lstm(cast(torch.nn.LSTM, lstm), inputs, lengths, state)
