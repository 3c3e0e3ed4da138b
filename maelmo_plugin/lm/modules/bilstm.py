"""
What the biLSTM encoders share: their options (documented and checked once), and the cell choices. The
per-layer state, the reversal of rows in time and ELMo's cell are the recurrence's (`recurrence/`).
"""

from dataclasses import dataclass
from typing import Any

from allennlp.common.checks import ConfigurationError

from maelmo_plugin.lm.modules.lm_encoder import LmEncoder

__all__ = [
    "BiLstmEncoder",
    "BiLstmOptions",
    "CELLS",
    "INITIALIZATIONS",
]

# "fused": torch's nn.LSTM(proj_size=...), unclipped; "elmo": AllenNLP's clipped LstmCellWithProjection.
CELLS = ("fused", "elmo")
# How the fused cell starts: torch's uniform, or as ELMo's cell (block-orthogonal, forget-gate bias 1).
INITIALIZATIONS = ("torch", "elmo")


@dataclass(frozen=True)
class BiLstmOptions:
    """
    The options of a biLSTM encoder, as its layers read them: see `BiLstmEncoder`, which documents and checks
    them, and holds their defaults.
    """

    input_dim: int
    cells: int
    num_layers: int
    dropout: float
    cell: str
    cell_clip: float
    projection_clip: float


class BiLstmEncoder(LmEncoder):
    """
    The base of the two biLSTM encoders, `MaskedElmoEncoder` and `ElmoBiLmEncoder`: the options they share,
    documented and checked here once, and kept in `options`. Not registered.

    A subclass's constructor takes its own options and `**options`, which AllenNLP's `FromParams` reads from
    this constructor: a config's `model.encoder` block, and the `config.json` of every archive trained so far,
    spell them as keys of their own, beside the subclass's. The messages name the fields as a config spells
    them (`model.encoder.cells`): an encoder is always a model's `encoder`.

    # Parameters

    input_dim : `int`
        The word-piece embedding size the encoder reads (d in Masked ELMo, each direction's projection P in
        ELMo; each encoder's docstring says what it returns).
    cells : `int`
        Memory cells per direction before the state projection (4096 in both papers). Must exceed the
        projection.
    num_layers : `int`, optional (default = `2`)
    dropout : `float`, optional (default = `0.1`)
        Dropout on the LSTMs' input (each encoder says which layers'; 0.1 is ELMo's).
    cell : `str`, optional (default = `"fused"`)
        `"fused"`: torch's `nn.LSTM(proj_size=...)`, which does not clip (Masked ELMo paper, 2.2): cuDNN on a
        GPU. `"elmo"`: ELMo's cell, AllenNLP's `LstmCellWithProjection`, which clips the cell and the
        projected state (much slower: one Python step per token).
    cell_clip : `float`, optional (default = `3.0`)
        Only for `cell="elmo"`: the cell state is clipped to [-cell_clip, cell_clip] (ELMo's 3).
    projection_clip : `float`, optional (default = `3.0`)
        Only for `cell="elmo"`: the projected state is clipped to [-projection_clip, projection_clip].
    """

    def __init__(
        self,
        input_dim: int,
        cells: int,
        num_layers: int = 2,
        dropout: float = 0.1,
        cell: str = "fused",
        cell_clip: float = 3.0,
        projection_clip: float = 3.0,
        **unknown: Any,
    ) -> None:
        super().__init__()
        # A subclass passes every key it does not know here, where a misspelled one would otherwise be
        # Python's TypeError rather than a configuration error naming the options.
        if unknown:
            raise ConfigurationError(
                f"model.encoder ({type(self).__name__}) has no option {', '.join(sorted(unknown))}: its options "
                f"are in its docstring's '# Parameters', and BiLstmEncoder's (input_dim, cells, num_layers, "
                f"dropout, cell, cell_clip, projection_clip)."
            )
        if cell not in CELLS:
            raise ConfigurationError(f"model.encoder.cell must be one of {CELLS}, got {cell!r}.")
        if num_layers < 1:
            raise ConfigurationError(f"model.encoder.num_layers must be at least 1, got {num_layers}.")
        self.options = BiLstmOptions(input_dim, cells, num_layers, dropout, cell, cell_clip, projection_clip)

    def check_projection(self, projection_size: int, projection_field: str, paper_sizes: str) -> None:
        """
        Refuses cells that do not exceed the state projection (`projection_size`, which the subclass derives
        from `input_dim` and names as `projection_field`): the projection would not reduce anything.
        `paper_sizes` is the paper's setting, for the message.
        """
        if self.options.cells <= projection_size:
            raise ConfigurationError(
                f"model.encoder.cells ({self.options.cells}) must exceed the projection size "
                f"model.encoder.{projection_field} ({projection_size}): raise cells or lower input_dim "
                f"({paper_sizes})."
            )

    def get_input_dim(self) -> int:
        return self.options.input_dim

    @property
    def num_layers(self) -> int:
        return self.options.num_layers
