import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.testing import AllenNlpTestCase

from maelmo_plugin.lm.modules.masked_elmo_encoder import MaskedElmoEncoder


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
            ({"input_dim": 7, "cells": 12}, r"model\.encoder\.input_dim must be even .*got 7: use 8"),
            (
                {"input_dim": 8, "cells": 4},
                r"model\.encoder\.cells \(4\) must exceed the projection .*raise cells",
            ),
            (
                {"input_dim": 8, "cells": 12, "num_layers": 0},
                r"model\.encoder\.num_layers must be at least 1",
            ),
        ],
    )
    def test_impossible_sizes_are_configuration_errors(self, kwargs, message):
        with pytest.raises(ConfigurationError, match=message):
            MaskedElmoEncoder(**kwargs)

    def test_a_misspelled_option_is_a_configuration_error_naming_it(self):
        """The shared options pass through `**options`: a key nobody takes is still refused by name."""
        params = Params({"input_dim": 8, "cells": 12, "celss": 24, "cpu_recurrence": False})
        with pytest.raises(ConfigurationError, match=r"\(MaskedElmoEncoder\) has no option celss: "):
            MaskedElmoEncoder.from_params(params)


def copy_lstm_into_elmo_cell(lstm: torch.nn.LSTM, suffix: str, cell) -> None:
    """
    Gives ELMo's `LstmCellWithProjection` the weights of one direction (`suffix` "_l0" or "_l0_reverse") of
    an `nn.LSTM(proj_size=...)`. Both order the gates input, forget, cell candidate ("memory"), output, so
    the blocks map one to one (ELMo's TensorFlow checkpoints order them i, j, f, o, which `ElmoLstm`'s
    `load_weights` re-orders, but that is not at play here); the cell has one bias where torch has two.
    """
    with torch.no_grad():
        cell.input_linearity.weight.copy_(getattr(lstm, f"weight_ih{suffix}"))
        cell.state_linearity.weight.copy_(getattr(lstm, f"weight_hh{suffix}"))
        cell.state_linearity.bias.copy_(getattr(lstm, f"bias_ih{suffix}") + getattr(lstm, f"bias_hh{suffix}"))
        cell.state_projection.weight.copy_(getattr(lstm, f"weight_hr{suffix}"))


class ElmoCellTest(AllenNlpTestCase):
    """`cell="elmo"`: ELMo's clipping cell in the Masked ELMo encoder (paper section 2.2)."""

    def encoders(self, clip: float):
        torch.manual_seed(0)
        fused = MaskedElmoEncoder(input_dim=8, cells=12, num_layers=2, dropout=0.0).eval()
        elmo = MaskedElmoEncoder(
            input_dim=8,
            cells=12,
            num_layers=2,
            dropout=0.0,
            cell="elmo",
            cell_clip=clip,
            projection_clip=clip,
        ).eval()
        for fused_layer, elmo_layer in zip(fused.layers, elmo.layers):
            torch.nn.init.normal_(fused_layer.norm.weight)
            torch.nn.init.normal_(fused_layer.norm.bias)
            for parameter in fused_layer.lstm.parameters():
                parameter.data.normal_(std=0.8)  # large enough for the states to reach the clip values
            elmo_layer.norm.load_state_dict(fused_layer.norm.state_dict())
            copy_lstm_into_elmo_cell(fused_layer.lstm, "_l0", elmo_layer.lstm.forward_cell)
            copy_lstm_into_elmo_cell(fused_layer.lstm, "_l0_reverse", elmo_layer.lstm.backward_cell)
        return fused, elmo

    def inputs(self):
        generator = torch.Generator().manual_seed(1)
        inputs = torch.randn(4, 7, 8, generator=generator)
        # Rows of unsorted lengths, so the elmo cell has to sort and unsort them.
        mask = torch.ones(4, 7, dtype=torch.bool)
        mask[0, 3:] = False
        mask[2, 5:] = False
        mask[3, 1:] = False
        states = [
            (torch.randn(2, 4, 4, generator=generator), torch.randn(2, 4, 12, generator=generator))
            for _ in range(2)
        ]
        return inputs * mask.unsqueeze(-1), mask, states

    def test_with_huge_clips_the_elmo_cell_equals_the_fused_one(self):
        fused, elmo = self.encoders(clip=1e9)
        for mask_and_states in ((None, None), self.inputs()[1:]):
            inputs = self.inputs()[0]
            mask, states = mask_and_states
            fused_layers, fused_states = fused(inputs, mask, states)
            elmo_layers, elmo_states = elmo(inputs, mask, states)
            for expected, actual in zip(fused_layers, elmo_layers):
                torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5)
            for (fused_h, fused_c), (elmo_h, elmo_c) in zip(fused_states, elmo_states):
                assert elmo_h.shape == (2, 4, 4) and elmo_c.shape == (2, 4, 12)
                torch.testing.assert_close(elmo_h, fused_h, atol=1e-5, rtol=1e-5)
                torch.testing.assert_close(elmo_c, fused_c, atol=1e-5, rtol=1e-5)

    def test_with_small_clips_clipping_changes_the_outputs(self):
        fused, elmo = self.encoders(clip=0.5)
        inputs, mask, states = self.inputs()
        fused_layers, fused_states = fused(inputs, mask, states)
        elmo_layers, elmo_states = elmo(inputs, mask, states)
        assert fused_states[0][1].abs().max() > 0.5  # the fused cell state goes beyond the clip ...
        assert elmo_states[0][1].abs().max() <= 0.5  # ... ELMo's does not
        assert elmo_states[0][0].abs().max() <= 0.5
        assert not torch.allclose(elmo_layers[-1], fused_layers[-1], atol=1e-3)

    def test_padded_rows_equal_the_same_rows_run_alone(self):
        _, elmo = self.encoders(clip=3.0)
        inputs, mask, _ = self.inputs()
        padded, _ = elmo(inputs, mask)
        for row in range(4):
            length = int(mask[row].sum())
            alone, _ = elmo(inputs[row : row + 1, :length])
            for layer_padded, layer_alone in zip(padded, alone):
                torch.testing.assert_close(layer_padded[row, :length], layer_alone[0], atol=1e-5, rtol=1e-5)
                assert layer_padded[row, length:].abs().sum() == 0

    def test_gradients_reach_every_parameter(self):
        _, elmo = self.encoders(clip=3.0)
        representations, _ = elmo.train()(torch.randn(2, 5, 8))
        representations[-1].sum().backward()
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in elmo.parameters())

    def test_unknown_cell_is_a_configuration_error(self):
        with pytest.raises(ConfigurationError, match="model.encoder.cell must be one of"):
            MaskedElmoEncoder(input_dim=8, cells=12, cell="cudnn")


def test_elmo_initialization_starts_the_fused_cell_as_elmos_cell():
    """Block-orthogonal gate weights, zero biases but the forget gate's 1 (LstmCellWithProjection's own)."""
    torch.manual_seed(0)
    encoder = MaskedElmoEncoder(input_dim=8, cells=6, num_layers=1, initialization="elmo")
    lstm = encoder.layers[0].lstm
    for direction in ("", "_reverse"):
        for name in ("weight_ih_l0", "weight_hh_l0"):
            weight = getattr(lstm, name + direction)
            for gate in weight.split(6):  # each gate's (cells x inputs) block
                square = gate @ gate.t() if gate.size(0) <= gate.size(1) else gate.t() @ gate
                torch.testing.assert_close(square, torch.eye(square.size(0)), atol=1e-5, rtol=0)
        total_bias = getattr(lstm, "bias_ih_l0" + direction) + getattr(lstm, "bias_hh_l0" + direction)
        torch.testing.assert_close(total_bias, torch.tensor([0.0] * 6 + [1.0] * 6 + [0.0] * 12))
    default = MaskedElmoEncoder(input_dim=8, cells=6, num_layers=1).layers[0].lstm
    assert not torch.equal(default.bias_hh_l0[6:12], torch.ones(6))


def test_an_unknown_initialization_is_refused():
    with pytest.raises(
        ConfigurationError, match=r"model.encoder.initialization must be one of \('torch', 'elmo'\)"
    ):
        MaskedElmoEncoder(input_dim=8, cells=6, initialization="xavier")
