"""
The fused LSTM of a training step replayed from a CUDA graph, so that the GPU does not wait on kernel
launches.

With a state projection, cuDNN runs its standard RNN algorithm: one set of kernels per time step,
direction and layer, each launched from the CPU. At the paper's size on one H200 the update then spends a
large part of its time launching: in a standalone trial (docs/performance_history.md, "CUDA graphs"), a
bf16 update with its two LSTM calls replayed from CUDA graphs ran 369k word-pieces/s against 205k eager. So each layer keeps a graph of its LSTM call, forward and backward
(`torch.cuda.make_graphed_callables`), for the pre-training window's shape; AllenNLP's trainer drives it
as usual (autograd, the optimizer, AMP's scaler, DDP's hooks on the weights' gradients).

What runs from a graph, and what runs eagerly:
* A graph is captured for a shape once it has been seen `CAPTURE_AFTER` times in training, and at most
  `MAX_GRAPHS` shapes are kept per layer: the fixed window shape of pre-training. Any other call (the last,
  shorter batch of an epoch, validation and evaluation, no gradients, a batch with padding, which needs
  packing, a CPU) runs `nn.LSTM` eagerly, with the same result.
* The key holds everything a graph bakes in: the input's shape, dtype and device, whether it requires
  gradients, the autocast state and dtype, and the weights' addresses (a graph reads the weights where they
  were at capture: a model moved or re-allocated is captured again).
* Carried BTBPTT states are graph inputs (zeros where a window starts a stream). A graph's outputs are
  buffers that its next replay overwrites, so the final states it returns are copies: they outlive the
  step (they start the next window). The layer's output is used and released within the step.
* Capture runs under autocast with its cache off, as `make_graphed_callables` needs, whatever the
  trainer's autocast cache setting. A capture that fails (an old driver, a CUDA error) is logged once, and
  the layer runs eagerly from then on.

`capture` is injectable, so that the choice of graph or eager and the copying of states are tested on a
CPU (`tests/lm/modules/recurrence/cuda_graphs_test.py`); the `gpu` tests check a real graph against eager.
"""

import logging
from collections import Counter
from collections.abc import Callable, Hashable
from typing import Optional

import torch

from maelmo_plugin.lm.modules.recurrence.layer import LayerState
from maelmo_plugin.lm.modules.recurrence.torch_lstm import torch_lstm

logger = logging.getLogger(__name__)

# A captured LSTM call: (inputs, h0, c0) -> (outputs, h_n, c_n), outputs in buffers the next call overwrites.
GraphedCall = Callable[
    [torch.Tensor, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor, torch.Tensor]
]

CAPTURE_AFTER = (
    2  # a shape seen this often in training is the window's: the last batch of an epoch is seen once
)
MAX_GRAPHS = 1  # per layer: each holds its activations' memory for good


class LstmCall(torch.nn.Module):
    """`lstm(x, (h, c))` as a module of three tensors in and three out, the form `make_graphed_callables` takes."""

    def __init__(self, lstm: torch.nn.LSTM) -> None:
        super().__init__()
        self.lstm = lstm

    def forward(
        self, inputs: torch.Tensor, h: torch.Tensor, c: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        outputs, (h_n, c_n) = self.lstm(inputs, (h, c))
        return outputs, h_n, c_n


def capture_cuda_graph(
    lstm: torch.nn.LSTM, inputs: torch.Tensor, h: torch.Tensor, c: torch.Tensor
) -> GraphedCall:
    """The LSTM call's forward and backward captured for tensors like these (run a few times to warm up)."""
    samples = tuple(tensor.detach().clone().requires_grad_(tensor.requires_grad) for tensor in (inputs, h, c))
    # `make_graphed_callables` replaces the forward of the module it is given: a wrapper of its own keeps
    # the LSTM's forward eager for every other shape.
    call = LstmCall(lstm)
    if torch.is_autocast_enabled("cuda"):
        with torch.autocast("cuda", dtype=torch.get_autocast_dtype("cuda"), cache_enabled=False):
            graphed = torch.cuda.make_graphed_callables(call, samples)
    else:
        graphed = torch.cuda.make_graphed_callables(call, samples)
    # Given a module, it graphs the module's forward in place and returns the module.
    assert isinstance(graphed, LstmCall)
    return graphed


class GraphedRecurrence:
    """
    Runs a fused `nn.LSTM` call from a CUDA graph where the call's shape is the training window's, eagerly
    otherwise (see the module's docstring). Not a `Module`: it holds no weights of its own, and the
    graphs it keeps stay out of the model's state dict.

    # Parameters

    enabled : `bool`, optional (default = `True`)
        `False` runs every call eagerly.
    capture : `Callable`, optional (default = `capture_cuda_graph`)
        Makes the graphed call for a layer's LSTM and sample `(inputs, h0, c0)`.
    device_type : `str`, optional (default = `"cuda"`)
        Where calls are graphed (tests give "cpu" with a stand-in `capture`).
    """

    def __init__(
        self,
        enabled: bool = True,
        capture: Callable[..., GraphedCall] = capture_cuda_graph,
        device_type: str = "cuda",
    ) -> None:
        self.enabled = enabled
        self._capture = capture
        self._device_type = device_type
        self._graphs: dict[tuple[Hashable, ...], GraphedCall] = {}
        self._seen: Counter = Counter()
        self._failed = False

    @property
    def num_graphs(self) -> int:
        return len(self._graphs)

    def __call__(
        self,
        lstm: torch.nn.LSTM,
        inputs: torch.Tensor,
        lengths: Optional[torch.Tensor],
        state: Optional[LayerState],
    ) -> tuple[torch.Tensor, LayerState]:
        eligible = lengths is None and self._eligible(lstm, inputs)
        graphed = self._graph_for(lstm, inputs) if eligible else None
        if graphed is None:
            return torch_lstm(lstm, inputs, lengths, state)
        h, c = state if state is not None else _zero_state(lstm, inputs)
        outputs, h_n, c_n = graphed(inputs, h, c)
        # The next replay overwrites h_n and c_n; the carried states must outlive it.
        return outputs, (h_n.clone(), c_n.clone())

    def _eligible(self, lstm: torch.nn.LSTM, inputs: torch.Tensor) -> bool:
        return (
            self.enabled
            and not self._failed
            and lstm.training
            and torch.is_grad_enabled()
            and inputs.requires_grad
            and inputs.device.type == self._device_type
            and not (inputs.is_cuda and torch.cuda.is_current_stream_capturing())  # inside a user's own graph
        )

    def _graph_for(self, lstm: torch.nn.LSTM, inputs: torch.Tensor) -> Optional[GraphedCall]:
        key = _key(lstm, inputs)
        graphed = self._graphs.get(key)
        if graphed is not None:
            return graphed
        weights = key[-1]
        # Graphs of weights that have moved read freed memory: drop them (and their memory pools).
        self._graphs = {old: call for old, call in self._graphs.items() if old[-1] == weights}
        self._seen[key] += 1
        if self._seen[key] < CAPTURE_AFTER or len(self._graphs) >= MAX_GRAPHS:
            return None
        h, c = _zero_state(lstm, inputs)
        try:
            graphed = self._capture(lstm, inputs, h, c)
        except RuntimeError as error:
            self._failed = True
            logger.warning(
                "Capturing the LSTM in a CUDA graph failed; it runs eagerly from now on: %s", error
            )
            return None
        self._graphs[key] = graphed
        logger.info("Captured a layer's LSTM in a CUDA graph for inputs of shape %s", tuple(inputs.shape))
        return graphed


def _key(lstm: torch.nn.LSTM, inputs: torch.Tensor) -> tuple[Hashable, ...]:
    device_type = inputs.device.type
    autocast = torch.is_autocast_enabled(device_type)
    return (
        tuple(inputs.shape),
        inputs.dtype,
        str(inputs.device),
        autocast,
        torch.get_autocast_dtype(device_type) if autocast else None,
        tuple(parameter.data_ptr() for parameter in lstm.parameters()),
    )


def _zero_state(lstm: torch.nn.LSTM, inputs: torch.Tensor) -> LayerState:
    """Zero (h0, c0) as `nn.LSTM` starts from when given none, in the dtype the LSTM runs in."""
    directions = 2 if lstm.bidirectional else 1
    rows = inputs.size(0) if lstm.batch_first else inputs.size(1)
    hidden = lstm.proj_size if lstm.proj_size > 0 else lstm.hidden_size
    return (
        inputs.new_zeros(lstm.num_layers * directions, rows, hidden),
        inputs.new_zeros(lstm.num_layers * directions, rows, lstm.hidden_size),
    )
