"""reproduction/lstm_weights.py: the sizes of an LSTM's weights, against values computed by hand."""

import math

import pytest
import torch

from reproduction.lstm_weights import lstm_weight_sizes


def test_the_sizes_are_the_input_norm_and_the_largest_gates_and_projections_spectral_norm():
    model = torch.nn.Module()
    model.stack = torch.nn.LSTM(input_size=3, hidden_size=4, proj_size=2, num_layers=2)
    model.plain = torch.nn.LSTM(input_size=2, hidden_size=2)
    with torch.no_grad():
        for lstm in (model.stack, model.plain):
            for name, weight in lstm.named_parameters():
                weight.fill_(1.0 if name.startswith("weight_ih") else 0.0)
        # gates stacked as (input, forget, cell, output): a diagonal block's spectral norm is its largest |entry|
        model.stack.weight_hh_l0[4:6] = torch.diag(torch.tensor([-7.0, 2.0]))  # the forget gate's rows 0-1
        model.stack.weight_hh_l1[14:16] = torch.diag(torch.tensor([0.5, 3.0]))  # the output gate's rows 2-3
        model.stack.weight_hr_l0.copy_(torch.tensor([[3.0, 0, 0, 0], [0, 0, 4.0, 0]]))
        model.plain.weight_hh_l0[0, 0] = 6.0
    sizes = lstm_weight_sizes(model)  # kept to 3 decimals
    assert sizes["stack.0"] == {
        "input_norm": pytest.approx(math.sqrt(16 * 3), abs=5e-4),  # 4 gates x 4 cells x 3 inputs, all ones
        "recurrent_spectral_norm": pytest.approx(7.0, abs=5e-4),
        "projection_spectral_norm": pytest.approx(4.0, abs=5e-4),
    }
    assert sizes["stack.1"]["input_norm"] == pytest.approx(
        math.sqrt(16 * 2), abs=5e-4
    )  # layer 2 reads the projection
    assert sizes["stack.1"]["recurrent_spectral_norm"] == pytest.approx(3.0, abs=5e-4)
    assert sizes["plain"] == {
        "input_norm": pytest.approx(math.sqrt(8 * 2), abs=5e-4),
        "recurrent_spectral_norm": pytest.approx(6.0, abs=5e-4),
    }
