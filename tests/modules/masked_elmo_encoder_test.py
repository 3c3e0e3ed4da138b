import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.common.testing import AllenNlpTestCase

from maelmo_plugin.modules.masked_elmo_encoder import MaskedElmoEncoder


def reference_layer(layer, inputs):
    """Section 2.1 written out with two separate unidirectional LSTMs that share the fused layer's weights."""
    lstm = layer.lstm
    directions = []
    for suffix, flip in (("", False), ("_reverse", True)):
        single = torch.nn.LSTM(lstm.input_size, lstm.hidden_size, proj_size=lstm.proj_size, batch_first=True)
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"):
            getattr(single, f"{name}_l0").data.copy_(getattr(lstm, f"{name}_l0{suffix}"))
        sequence = inputs.flip(1) if flip else inputs
        output, _ = single(sequence)
        directions.append(output.flip(1) if flip else output)
    norm = layer.norm
    forward = torch.nn.functional.layer_norm(directions[0], (norm.size,), norm.weight[0], norm.bias[0])
    backward = torch.nn.functional.layer_norm(directions[1], (norm.size,), norm.weight[1], norm.bias[1])
    return torch.cat([forward, backward], -1) + inputs


class MaskedElmoEncoderTest(AllenNlpTestCase):
    def setup_method(self):
        super().setup_method()
        torch.manual_seed(0)
        self.encoder = MaskedElmoEncoder(input_dim=8, cells=12, num_layers=2, dropout=0.0).eval()
        for layer in self.encoder.layers:  # non-trivial LayerNorm parameters, so the test sees them
            torch.nn.init.normal_(layer.norm.weight)
            torch.nn.init.normal_(layer.norm.bias)
        self.inputs = torch.randn(3, 7, 8)

    def test_returns_all_layers_and_states_with_the_documented_shapes(self):
        representations, states = self.encoder(self.inputs)
        assert len(representations) == 3
        assert all(r.shape == (3, 7, 8) for r in representations)
        assert torch.equal(representations[0], self.inputs)
        assert [(h.shape, c.shape) for h, c in states] == [((2, 3, 4), (2, 3, 12))] * 2

    def test_matches_the_paper_equation_computed_direction_by_direction(self):
        representations, _ = self.encoder(self.inputs)
        expected = self.inputs
        for layer, actual in zip(self.encoder.layers, representations[1:]):
            expected = reference_layer(layer, expected)
            torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5)

    def test_padded_rows_equal_the_same_rows_run_alone(self):
        mask = torch.ones(3, 7, dtype=torch.bool)
        mask[1, 4:] = False
        mask[2, 2:] = False
        padded, _ = self.encoder(self.inputs * mask.unsqueeze(-1), mask)
        for row, length in ((1, 4), (2, 2)):
            alone, _ = self.encoder(self.inputs[row : row + 1, :length])
            for layer_padded, layer_alone in zip(padded, alone):
                torch.testing.assert_close(layer_padded[row, :length], layer_alone[0], atol=1e-5, rtol=1e-5)
                assert layer_padded[row, length:].abs().sum() == 0

    def test_second_layer_is_fully_contextual_and_first_is_not(self):
        changed = self.inputs.clone()
        changed[:, 5] += 1.0  # a change to the right of position 2
        original, _ = self.encoder(self.inputs)
        altered, _ = self.encoder(changed)
        forward_half = slice(0, 4)
        # Layer 1's forward direction at position 2 cannot see position 5 ...
        torch.testing.assert_close(original[1][:, 2, forward_half], altered[1][:, 2, forward_half])
        # ... but layer 2's forward direction reads layer 1's backward output, which did.
        assert not torch.allclose(original[2][:, 2, forward_half], altered[2][:, 2, forward_half])

    def test_initial_states_continue_the_forward_direction_across_windows(self):
        encoder = MaskedElmoEncoder(input_dim=8, cells=12, num_layers=1, dropout=0.0).eval()
        whole, _ = encoder(self.inputs)
        _, states = encoder(self.inputs[:, :4])
        continued, _ = encoder(self.inputs[:, 4:], initial_states=states)
        torch.testing.assert_close(continued[1][:, :, :4], whole[1][:, 4:, :4], atol=1e-5, rtol=1e-5)

    def test_gradients_reach_every_parameter(self):
        representations, _ = self.encoder.train()(self.inputs)
        representations[-1].sum().backward()
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in self.encoder.parameters())

    @pytest.mark.parametrize(
        "kwargs, message",
        [
            ({"input_dim": 7, "cells": 12}, "must be even"),
            ({"input_dim": 8, "cells": 4}, "must exceed the projection size"),
            ({"input_dim": 8, "cells": 12, "num_layers": 0}, "at least 1"),
        ],
    )
    def test_impossible_sizes_are_configuration_errors(self, kwargs, message):
        with pytest.raises(ConfigurationError, match=message):
            MaskedElmoEncoder(**kwargs)
