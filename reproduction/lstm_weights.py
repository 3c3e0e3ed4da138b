"""
The sizes of a language model's LSTM weights, which tell a saturating LSTM from a well-conditioned one: for
each `torch.nn.LSTM` of the model, the Frobenius norm of its input weights and the largest spectral norm among
its four gates' recurrent weights (and of its state projection, where it has one). A freshly initialised LSTM's
spectral norms are about 1; weights grown well past that drive the gates to 0 or 1, where their gradients
vanish, which is what a fine-tune then has to undo. `python -m reproduction` keeps them for the `elmo_transfer`
campaign as `encoder_weights.json`.
"""

from pathlib import Path

import torch


def archive_lstm_weight_sizes(archive: Path, reinitialize: bool = False, seed: int = 1) -> dict:
    """`lstm_weight_sizes` of the archive's language model, or of a fresh initialisation of its architecture
    (`reinitialize`, drawn with `seed`)."""
    import maelmo_plugin  # noqa: F401  (registers the models)
    from maelmo_plugin.lm.loading import open_language_model

    torch.manual_seed(seed)
    model, _ = open_language_model(str(archive), reinitialize, None)
    return lstm_weight_sizes(model)


def lstm_weight_sizes(model: torch.nn.Module) -> dict:
    """{LSTM name (with its layer where it has several): {input_norm, recurrent_spectral_norm,
    projection_spectral_norm}} for every `torch.nn.LSTM` in `model`."""
    sizes = {}
    for name, lstm in model.named_modules():
        if not isinstance(lstm, torch.nn.LSTM):
            continue
        for layer in range(lstm.num_layers):
            recurrent = getattr(lstm, f"weight_hh_l{layer}").detach()
            gates = recurrent.split(recurrent.shape[0] // 4)  # input, forget, cell, output
            entry = {
                "input_norm": round(float(getattr(lstm, f"weight_ih_l{layer}").detach().norm()), 3),
                "recurrent_spectral_norm": round(
                    max(float(torch.linalg.matrix_norm(g, 2)) for g in gates), 3
                ),
            }
            if lstm.proj_size:
                projection = getattr(lstm, f"weight_hr_l{layer}").detach()
                entry["projection_spectral_norm"] = round(float(torch.linalg.matrix_norm(projection, 2)), 3)
            sizes[name if lstm.num_layers == 1 else f"{name}.{layer}"] = entry
    return sizes
