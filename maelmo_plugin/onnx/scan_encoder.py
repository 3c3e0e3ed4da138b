"""
The Masked ELMo encoder (cell "fused") written for ONNX export: the same arithmetic as `MaskedElmoEncoder`,
in tensor operations and torch's `scan` higher-order op only, so that the dynamo exporter can write it.

Why not export `MaskedElmoEncoder` or the Hugging Face model: ONNX's `LSTM` operator has no projection, so
no exporter maps `nn.LSTM(proj_size=...)` onto it (the TorchScript exporter refuses it; the dynamo exporter
writes a graph that ONNX Runtime cannot load), and packed sequences do not export (pytorch#62240). Here
each layer's recurrence is one `scan` over time (an ONNX `Scan`), and padding is handled with the lengths
that the attention mask gives (docs/onnx.md).

    input_ids, attention_mask                      (B, T) int64, right-padded
    h_0 = embedding[input_ids]                     (B, T, d)
    per layer: gate inputs x W_ih^T + b for both directions at once, the backward direction's rows
    reversed within their lengths, one scan over T for both directions, the backward outputs reversed
    back, per-direction LayerNorm, skip connection
    hidden_states = stack(h_0 ... h_L) * mask      (L + 1, B, T, d), zero at padding

The forward direction at a real token reads only the tokens before it, and the backward direction starts
at each row's last real token: a padded row gives the vectors of the row alone.
"""

import torch
from torch._higher_order_ops.scan import scan

from maelmo_plugin.lm.modules.cpu_lstm_recurrence import reversal_index, reverse_in_time
from maelmo_plugin.lm.modules.masked_elmo_encoder import BiLstmLayer


class ScanBiLstmLayer(torch.nn.Module):
    """
    One layer of the encoder (projected biLSTM, per-direction LayerNorm, skip) from a `BiLstmLayer`'s
    weights, copied, transposed, one per direction (index 0 forward). Each product is a 2-D MatMul with a
    constant weight, which ONNX Runtime packs once; a batched product over weights stacked on an axis of 2
    made it pack them again at every call (1.3 times slower at the paper's size, batch 32, measured).
    """

    def __init__(self, layer: BiLstmLayer) -> None:
        super().__init__()
        lstm = layer.lstm
        if not isinstance(lstm, torch.nn.LSTM) or lstm.num_layers != 1 or not lstm.bidirectional:
            raise ValueError("Only the fused cell (one bidirectional nn.LSTM with projection) exports.")

        def transposed(name: str) -> torch.nn.ParameterList:
            weights = [getattr(lstm, f"{name}_l0{suffix}").detach() for suffix in ("", "_reverse")]
            return torch.nn.ParameterList(
                torch.nn.Parameter(weight.t().contiguous(), requires_grad=False) for weight in weights
            )

        # Shapes, per direction: weight_ih (d, 4C), weight_hh (P, 4C), weight_hr (C, P); bias (2, 1, 4C).
        self.weight_ih = transposed("weight_ih")
        self.weight_hh = transposed("weight_hh")
        self.weight_hr = transposed("weight_hr")
        bias = torch.stack(
            [lstm.bias_ih_l0 + lstm.bias_hh_l0, lstm.bias_ih_l0_reverse + lstm.bias_hh_l0_reverse]
        )
        self.bias = torch.nn.Parameter(bias.detach().unsqueeze(1).clone(), requires_grad=False)
        self.norm_weight = torch.nn.Parameter(layer.norm.weight.detach().clone(), requires_grad=False)
        self.norm_bias = torch.nn.Parameter(layer.norm.bias.detach().clone(), requires_grad=False)
        self.cells = lstm.hidden_size
        self.projection = lstm.proj_size

    def forward(self, inputs: torch.Tensor, reversal: torch.Tensor) -> torch.Tensor:
        batch_size, num_steps, _ = inputs.shape
        # Shape: (T, B, d) per direction: the backward direction reads each row reversed within its length.
        time_major = inputs.transpose(0, 1)
        directions = [time_major, reverse_in_time(time_major, reversal, time_dim=0)]
        # Shape: (T, 2, B, 4C): every step's input products, computed at once before the recurrence.
        products = [torch.matmul(x.flatten(0, 1), weight) for x, weight in zip(directions, self.weight_ih)]
        gate_inputs = (
            (torch.stack(products) + self.bias).unflatten(1, (num_steps, batch_size)).transpose(0, 1)
        )
        h0 = inputs.new_zeros(2, batch_size, self.projection)
        c0 = inputs.new_zeros(2, batch_size, self.cells)

        def per_direction(rows: torch.Tensor, weights: torch.nn.ParameterList) -> torch.Tensor:
            """(2, B, in) -> (2, B, out): each direction's rows times its own weight."""
            return torch.stack([torch.matmul(rows[0], weights[0]), torch.matmul(rows[1], weights[1])])

        def step(carry: tuple[torch.Tensor, torch.Tensor], gate_input: torch.Tensor):
            h, c = carry
            # Shape: (2, B, 4C), gates in torch's order (input, forget, cell, output)
            gates = gate_input + per_direction(h, self.weight_hh)
            input_gate, forget_gate, candidate, output_gate = gates.chunk(4, dim=-1)
            c = torch.sigmoid(forget_gate) * c + torch.sigmoid(input_gate) * torch.tanh(candidate)
            # Shape: (2, B, P)
            h = per_direction(torch.sigmoid(output_gate) * torch.tanh(c), self.weight_hr)
            # The per-step output must be a fresh tensor: torch.export refuses the carry itself.
            return (h, c), h.clone()

        _, outputs = scan(step, (h0, c0), gate_inputs)
        # Shape: (T, 2, B, P) -> each direction (T, B, P), the backward one put back in reading order.
        forward_outputs = outputs[:, 0]
        backward_outputs = reverse_in_time(outputs[:, 1], reversal, time_dim=0)
        # Shape: (B, T, 2, P): [..., 0, :] forward, [..., 1, :] backward, as `PerDirectionLayerNorm` reads it.
        halves = torch.stack([forward_outputs, backward_outputs], dim=2).transpose(0, 1)
        normalized = torch.nn.functional.layer_norm(halves, (self.projection,)) * self.norm_weight
        return (normalized + self.norm_bias).flatten(-2) + inputs


class ScanMaskedElmoEncoder(torch.nn.Module):
    """
    The word-piece embedding and the encoder's layers, from `input_ids` and `attention_mask` (both
    (batch_size, num_tokens), int64, right-padded) to `hidden_states` (L + 1, batch_size, num_tokens, d),
    zero at padding. A copy of the weights, in eval mode: no dropout.
    """

    def __init__(self, embedding: torch.nn.Embedding, layers: list[BiLstmLayer]) -> None:
        super().__init__()
        self.embedding_weight = torch.nn.Parameter(embedding.weight.detach().clone(), requires_grad=False)
        self.layers = torch.nn.ModuleList(ScanBiLstmLayer(layer) for layer in layers)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        mask = attention_mask > 0
        num_steps = input_ids.size(1)
        # As the plugin does, a row of padding only still runs one step; its vectors are zeroed below.
        lengths = mask.sum(dim=1).clamp(min=1)
        # Shape: (T, B): the time index that reverses each row within its length (its own inverse).
        reversal = reversal_index(lengths, num_steps)
        # Shape: (B, T, d)
        representations = [torch.nn.functional.embedding(input_ids, self.embedding_weight)]
        for layer in self.layers:
            representations.append(layer(representations[-1], reversal))
        # Shape: (L + 1, B, T, d)
        return torch.stack(representations) * mask.unsqueeze(-1).to(representations[0].dtype)
