"""
Which form of the projected LSTM layer runs a call, and why: the one place where the choice is made.

Every form computes what a one-layer `nn.LSTM(d, cells, proj_size=P, bidirectional=True, batch_first=True)`
computes over packed sequences, from that module's own parameters (so checkpoints are the same whichever
runs), behind one signature, `Recurrence`:

    form(lstm, inputs, lengths, state) -> (outputs, final_state)

    lstm     the layer's nn.LSTM (only its parameters are read), or its pair of ELMo cells
    inputs   (batch_size, num_tokens, d)
    lengths  (batch_size,), or None when no row is padded
    state    (h, c) to start from (`LayerState`, `layer.py`), or None for zeros
    outputs  (batch_size, num_tokens, 2 * P), [forward ; backward], zero at padding

The forms, each in its own file of this folder:

    cpu_bidirectional_lstm        cpu.py          CPU, training
    inference_bidirectional_lstm  inference.py    CPU, nothing needs gradients; fp32, int8 or bf16 products
                                                  (reduced_precision.py)
    GraphedRecurrence             cuda_graphs.py  GPU training windows, replayed from a CUDA graph
    torch_lstm                    torch_lstm.py   everything else: cuDNN on a GPU, ATen on a CPU
    elmo_cells                    elmo_cell.py    ELMo's own cell (`cell="elmo"`), which clips its states:
                                                  AllenNLP's `LstmCellWithProjection`, on any device

A layer says once, when it is built, how its LSTM may run (`RecurrenceOptions`); each call brings its own
tensors and `precision`. The ONNX export runs another form, a Scan traced ahead of time
(`maelmo_plugin/onnx/scan_encoder.py`), and the Hugging Face export ships `cpu.py` (`standalone.py`):
neither is chosen here, at run time.
"""

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional, Union

import torch

from maelmo_plugin.lm.modules.recurrence.cpu import cpu_bidirectional_lstm
from maelmo_plugin.lm.modules.recurrence.cuda_graphs import GraphedRecurrence
from maelmo_plugin.lm.modules.recurrence.elmo_cell import ElmoCellPair, elmo_cells
from maelmo_plugin.lm.modules.recurrence.inference import inference_bidirectional_lstm
from maelmo_plugin.lm.modules.recurrence.layer import LayerState
from maelmo_plugin.lm.modules.recurrence.reduced_precision import PRODUCTS
from maelmo_plugin.lm.modules.recurrence.torch_lstm import torch_lstm

# The first argument is the layer's `nn.LSTM`, or its `ElmoCellPair` for `elmo_cells`.
Recurrence = Callable[
    [Any, torch.Tensor, Optional[torch.Tensor], Optional[LayerState]],
    tuple[torch.Tensor, LayerState],
]


@dataclass(frozen=True)
class RecurrenceOptions:
    """
    How one layer's LSTM may run: the layer's configuration, set when it is built (`BiLstmLayer`), which
    `choose_recurrence` reads beside the call's own arguments.

    # Parameters

    cpu_recurrence : `bool`, optional (default = `True`)
        False runs torch's own LSTM on a CPU too, to compare the two.
    graphs : `GraphedRecurrence`, optional (default = `None`)
        The layer's CUDA graphs, when it has them.
    """

    cpu_recurrence: bool = True
    graphs: Optional[GraphedRecurrence] = None


def choose_recurrence(
    lstm: Union[torch.nn.LSTM, ElmoCellPair],
    inputs: torch.Tensor,
    lengths: Optional[torch.Tensor],
    state: Optional[LayerState],
    precision: str = "fp32",
    options: Optional[RecurrenceOptions] = None,
) -> Recurrence:
    """
    The form that runs `lstm` on these arguments (the module's docstring lists the forms).

    # Parameters

    lstm, inputs, lengths, state :
        The call's, as `Recurrence` takes them.
    precision : `str`, optional (default = `"fp32"`)
        The call's: the CPU inference recurrence's products, `"fp32"`, `"int8"` or `"bf16"`
        (`reduced_precision.py`). The caller refuses a reduced precision where the CPU inference recurrence
        would not run (`MaskedElmoEncoder.reduced_precision_refusal`).
    options : `RecurrenceOptions`, optional (default = `RecurrenceOptions()`)
        The layer's: how its LSTM may run.
    """
    options = options or RecurrenceOptions()
    if isinstance(lstm, ElmoCellPair):
        # ELMo's cell is its own implementation everywhere: one Python step per token, with its clipping.
        return elmo_cells
    if inputs.device.type == "cpu" and options.cpu_recurrence:
        if needs_gradients(lstm, inputs, state):
            # oneDNN has no LSTM with projection, so torch runs ATen's per-step loop on a CPU, adding the
            # recurrent weights' gradients one step at a time; this form batches them over time and packs the
            # weights once (docs/performance.md, "The CPU recurrence").
            return cpu_bidirectional_lstm
        # Nothing to differentiate: keep no activations and compute no padding; the one form whose products
        # can be reduced to int8 or bfloat16.
        return functools.partial(inference_bidirectional_lstm, products=PRODUCTS[precision])
    graphs = options.graphs
    if graphs is not None and graphs.enabled and lengths is None:
        # cuDNN launches a set of kernels per time step from the CPU; a graph replays them at once. It runs
        # `torch_lstm` itself for the calls it does not graph (another shape, no gradients).
        return graphs
    # cuDNN fuses the whole recurrence on a GPU; on a CPU, `cpu_recurrence` False asked for torch's.
    return torch_lstm


def needs_gradients(lstm: torch.nn.Module, inputs: torch.Tensor, state: Optional[LayerState]) -> bool:
    """Whether a gradient could flow back through the LSTM: else the inference recurrence can run it."""
    if not torch.is_grad_enabled():
        return False
    tensors = [inputs, *lstm.parameters(), *(state or ())]
    return any(tensor.requires_grad for tensor in tensors)
