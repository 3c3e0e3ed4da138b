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
    per layer: gate inputs x W_ih^T + b of all steps, one product per direction, the backward direction's
    rows reversed within their lengths, one scan over T for both directions (each with its own carry,
    input and output), the backward outputs reversed back, per-direction LayerNorm, skip connection
    hidden_states = stack(h_0 ... h_L) * mask      (L + 1, B, T, d), zero at padding

The forward direction at a real token reads only the tokens before it, and the backward direction starts
at each row's last real token: a padded row gives the vectors of the row alone.
"""

import torch
from torch._higher_order_ops.scan import scan

from maelmo_plugin.lm.modules.masked_elmo_encoder import BiLstmLayer
from maelmo_plugin.lm.modules.recurrence import direction_parameters, reversal_index, reverse_in_time


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
            weights = [weight.detach() for weight in direction_parameters(lstm, name)]
            return torch.nn.ParameterList(
                torch.nn.Parameter(weight.t().contiguous(), requires_grad=False) for weight in weights
            )

        # Shapes, per direction: weight_ih (d, 4C), weight_hh (P, 4C), weight_hr (C, P), bias (4C,).
        self.weight_ih = transposed("weight_ih")
        self.weight_hh = transposed("weight_hh")
        self.weight_hr = transposed("weight_hr")
        self.bias = torch.nn.ParameterList(
            torch.nn.Parameter((ih + hh).detach().clone(), requires_grad=False)
            for ih, hh in zip(direction_parameters(lstm, "bias_ih"), direction_parameters(lstm, "bias_hh"))
        )
        self.norm_weight = torch.nn.Parameter(layer.norm.weight.detach().clone(), requires_grad=False)
        self.norm_bias = torch.nn.Parameter(layer.norm.bias.detach().clone(), requires_grad=False)
        self.cells = lstm.hidden_size
        self.projection = lstm.proj_size

    def forward(self, inputs: torch.Tensor, reversal: torch.Tensor) -> torch.Tensor:
        batch_size, num_steps, _ = inputs.shape
        # Shape: (T, B, d) per direction: the backward direction reads each row reversed within its length.
        time_major = inputs.transpose(0, 1)
        directions = [time_major, reverse_in_time(time_major, reversal, time_dim=0)]
        # Shape: (T, B, 4C) per direction: every step's input products, computed at once before the recurrence.
        gate_inputs = [
            (torch.matmul(x.flatten(0, 1), weight) + bias).unflatten(0, (num_steps, batch_size))
            for x, weight, bias in zip(directions, self.weight_ih, self.bias)
        ]
        states = [inputs.new_zeros(batch_size, size) for size in (self.projection, self.cells) * 2]

        def cell(gate_input, h, c, direction: int):
            """One step of one direction: (B, 4C), (B, P), (B, C) -> h (B, P), c (B, C)."""
            # Gates in torch's order (input, forget, cell, output)
            gates = gate_input + torch.matmul(h, self.weight_hh[direction])
            input_gate, forget_gate, candidate, output_gate = gates.chunk(4, dim=-1)
            c = torch.sigmoid(forget_gate) * c + torch.sigmoid(input_gate) * torch.tanh(candidate)
            return torch.matmul(torch.sigmoid(output_gate) * torch.tanh(c), self.weight_hr[direction]), c

        def step(carry, gate_input):
            # Each direction its own carry, input and output: no stacking of the two at every step.
            h_forward, c_forward = cell(gate_input[0], carry[0], carry[1], 0)
            h_backward, c_backward = cell(gate_input[1], carry[2], carry[3], 1)
            # The per-step outputs must be fresh tensors: torch.export refuses the carry itself.
            return (h_forward, c_forward, h_backward, c_backward), (h_forward.clone(), h_backward.clone())

        _, (forward_outputs, backward_outputs) = scan(step, tuple(states), tuple(gate_inputs))
        # Shape: (T, B, P) each, the backward one put back in reading order.
        backward_outputs = reverse_in_time(backward_outputs, reversal, time_dim=0)
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
