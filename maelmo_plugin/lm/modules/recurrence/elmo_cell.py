"""
ELMo's LSTM cell with projection (AllenNLP's `LstmCellWithProjection`, which clips the cell state at
`cell_clip` and the projected state at `projection_clip`, 3 in ELMo) behind the interface of torch's
`nn.LSTM(proj_size=..., batch_first=True)`, so that both encoders swap it in for the fused cell with
`cell="elmo"` (Masked ELMo paper, section 2.2) and run everything else unchanged. A Masked ELMo layer's pair
of cells is one of the forms `choose_recurrence` picks from (`elmo_cells`).
"""

from typing import Optional

import torch
from allennlp.modules.lstm_cell_with_projection import LstmCellWithProjection
from allennlp.nn.initializers import block_orthogonal
from allennlp.nn.util import sort_batch_by_length

from maelmo_plugin.lm.modules.recurrence.layer import LayerState


class ElmoCell(LstmCellWithProjection):
    """
    One direction of ELMo's cell. `run()` takes and returns what a one-direction `nn.LSTM` does: outputs
    (batch, tokens, hidden_size), zero at padding, and states h (1, batch, hidden_size), c (1, batch, cells)
    in the caller's row order. `go_forward=False` reads each row right to left within its length.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        cells: int,
        cell_clip: float,
        projection_clip: float,
        go_forward: bool = True,
    ) -> None:
        super().__init__(
            input_size,
            hidden_size,
            cells,
            go_forward=go_forward,
            recurrent_dropout_probability=0.0,
            memory_cell_clip_value=cell_clip,
            state_projection_clip_value=projection_clip,
        )

    def run(
        self, inputs: torch.Tensor, lengths: Optional[torch.Tensor], state: Optional[LayerState]
    ) -> tuple[torch.Tensor, LayerState]:
        batch_size, num_tokens, _ = inputs.shape
        if lengths is None:
            lengths = torch.full((batch_size,), num_tokens, dtype=torch.long, device=inputs.device)
        # `LstmCellWithProjection` needs the rows sorted by decreasing length.
        sorted_inputs, sorted_lengths, restoration, sorting = sort_batch_by_length(inputs, lengths)
        if state is not None:
            state = (state[0].index_select(1, sorting), state[1].index_select(1, sorting))
        # Shape: (batch_size, num_tokens, hidden_size); states (1, batch_size, size), rows sorted
        output, (h, c) = self(sorted_inputs, sorted_lengths.tolist(), state)
        return output.index_select(0, restoration), (
            h.index_select(1, restoration),
            c.index_select(1, restoration),
        )


class ElmoCellPair(torch.nn.Module):
    """
    ELMo's cell in both directions over the same inputs, with the layout of a bidirectional
    `nn.LSTM(proj_size=...)`: outputs `[forward ; backward]`, states h (2, batch, hidden_size) and
    c (2, batch, cells) with index 0 forward.
    """

    def __init__(
        self, input_size: int, hidden_size: int, cells: int, cell_clip: float, projection_clip: float
    ) -> None:
        super().__init__()
        self.forward_cell, self.backward_cell = (
            ElmoCell(input_size, hidden_size, cells, cell_clip, projection_clip, go_forward=go_forward)
            for go_forward in (True, False)
        )

    def forward(
        self, inputs: torch.Tensor, lengths: Optional[torch.Tensor], state: Optional[LayerState]
    ) -> tuple[torch.Tensor, LayerState]:
        states = (
            [None, None] if state is None else [(state[0][:1], state[1][:1]), (state[0][1:], state[1][1:])]
        )
        (forward_output, (forward_h, forward_c)), (backward_output, (backward_h, backward_c)) = (
            cell.run(inputs, lengths, direction_state)
            for cell, direction_state in zip((self.forward_cell, self.backward_cell), states)
        )
        # Shape: (batch_size, num_tokens, 2 * hidden_size); (2, batch_size, size)
        output = torch.cat([forward_output, backward_output], dim=-1)
        return output, (torch.cat([forward_h, backward_h]), torch.cat([forward_c, backward_c]))


def elmo_cells(
    cells: ElmoCellPair, inputs: torch.Tensor, lengths: Optional[torch.Tensor], state: Optional[LayerState]
) -> tuple[torch.Tensor, LayerState]:
    """The pair of ELMo cells as a form of the layer (`Recurrence`, `choice.py`): the pair runs the call."""
    return cells(inputs, lengths, state)


def elmo_initialization(lstm: torch.nn.LSTM) -> None:
    """
    Initialises torch's fused `lstm` as `LstmCellWithProjection.reset_parameters` does ELMo's cell, so that
    the two cells can be compared from the same start: each gate's input and recurrent weights a
    (block-)orthogonal matrix, the biases zero but the forget gate's 1. nn.LSTM's gate order (input, forget,
    cell, output) is ELMo's; its projection keeps torch's U(-1/sqrt(cells), 1/sqrt(cells)), which is also
    what ELMo's bias-free projection `Linear(cells, hidden)` starts from.
    """
    cells = lstm.hidden_size
    with torch.no_grad():
        for name, parameter in lstm.named_parameters():
            if name.startswith(("weight_ih", "weight_hh")):
                block_orthogonal(parameter, [cells, parameter.size(1)])
            elif name.startswith("bias_ih"):
                parameter.zero_()
            elif name.startswith("bias_hh"):  # nn.LSTM adds bias_ih and bias_hh: one holds ELMo's bias
                parameter.zero_()
                parameter[cells : 2 * cells] = 1.0
