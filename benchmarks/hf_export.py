"""
The Hugging Face export against the plugin, on the same model and batch: a `Trainer`-like fine-tuning step
(masked-LM loss, backward, gradient clipping at 1.0, AdamW: what `Trainer` does with
`DataCollatorForLanguageModeling`) and inference (the L + 1 representations, no gradients).

Both sides do the same arithmetic: the plugin's side runs its encoder (`maelmo_masked_elmo_lm.representations`)
and its tied softmax at every position, as the export's `MaskedElmoForMaskedLM` does, with the same labels
(15% of the positions, -100 elsewhere). The export's model is `maelmo_plugin/hf/modeling_masked_elmo.py`,
the file every export carries, holding the plugin's weights (`hf_state_dict`). It runs with
`lstm_implementation` "auto" (on a CPU: the plugin's CPU recurrence, `lm/modules/recurrence/cpu.py`) and, as the
before-and-after row, "torch" (torch's `nn.LSTM`, what exports ran before).

The default size is the Quickstart's model (`training_config/lm/pretrain_small.jsonnet`: d=128, 2 layers
of 512 cells, its 2,000-entry vocabulary, dropout 0.1) at batch 16 x 64.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/hf_export.py
"""

from collections.abc import Callable

import common
import torch
import torch.nn.functional as F

from maelmo_plugin.hf.configuration_masked_elmo import MaskedElmoConfig
from maelmo_plugin.hf.export import hf_state_dict
from maelmo_plugin.hf.modeling_masked_elmo import MaskedElmoForMaskedLM

# The export may take at most 5% longer than the plugin for the same work.
TARGET = 1.05


def exported(model, dim: int, cells: int, dropout: float, implementation: str) -> MaskedElmoForMaskedLM:
    """The export's masked LM with the plugin model's weights; special ids as `common.vocabulary` has them."""
    config = MaskedElmoConfig(
        vocab_size=model.vocab.get_vocab_size(model.namespace),
        hidden_size=dim,
        cell_size=cells,
        num_hidden_layers=model.encoder.num_layers,
        hidden_dropout_prob=dropout,
        pad_token_id=0,
        unk_token_id=1,
        cls_token_id=2,
        sep_token_id=3,
        mask_token_id=4,
        lstm_implementation=implementation,
    )
    hf_model = MaskedElmoForMaskedLM(config)
    hf_model.load_state_dict(hf_state_dict(model), strict=True)
    return hf_model


def trainer_step(
    model: torch.nn.Module, loss: Callable[[], torch.Tensor], forward_context
) -> Callable[[], None]:
    """
    What `Trainer` does per batch: the loss (under autocast with `bf16=True`), backward, clip the gradient norm
    at 1.0, AdamW, zero the gradients.
    """
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)

    def step() -> None:
        with forward_context():
            value = loss()
        value.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def main() -> None:
    parser = common.parser(__doc__)
    common.add_size_options(parser, "128x512", batch_size=16, sequence_length=64)
    common.add_autocast_option(parser)
    parser.add_argument("--vocab-size", type=int, default=2000, help="the Quickstart's sample vocabulary")
    parser.add_argument("--dropout", type=float, default=0.1)
    args = parser.parse_args()
    device = common.setup(args)
    forward_context = common.autocast(args, device)
    dim, cells = common.parse_size(args.size)
    plugin = common.masked_elmo_lm(args.vocab_size, dim, cells, dropout=args.dropout).to(device).train()
    exports = {
        implementation: exported(plugin, dim, cells, args.dropout, implementation).to(device).train()
        for implementation in ("auto", "torch")
    }
    token_ids = common.token_batch(args.vocab_size, args.batch_size, args.sequence_length, device)
    mask = torch.ones_like(token_ids, dtype=torch.bool)
    # DataCollatorForLanguageModeling's targets: 15% of the positions, -100 elsewhere.
    labels = token_ids.masked_fill(torch.rand(token_ids.shape, device=device) >= 0.15, -100)

    def plugin_loss() -> torch.Tensor:
        logits = plugin._output_logits(plugin.representations(token_ids, mask)[-1])
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)

    def plugin_inference() -> None:
        with torch.no_grad(), forward_context():
            plugin.representations(token_ids, mask)

    def export_inference(model: MaskedElmoForMaskedLM) -> Callable[[], None]:
        def run() -> None:
            with torch.no_grad(), forward_context():
                model.masked_elmo(token_ids, attention_mask=mask.long(), output_hidden_states=True)

        return run

    def export_loss(model: MaskedElmoForMaskedLM) -> Callable[[], torch.Tensor]:
        return lambda: model(token_ids, attention_mask=mask.long(), labels=labels).loss

    training = common.interleaved(
        {
            "plugin": trainer_step(plugin, plugin_loss, forward_context),
            **{
                name: trainer_step(model, export_loss(model), forward_context)
                for name, model in exports.items()
            },
        },
        device,
        args.warmup,
        args.repeats,
    )
    plugin.eval(), [model.eval() for model in exports.values()]
    inference = common.interleaved(
        {"plugin": plugin_inference, **{name: export_inference(model) for name, model in exports.items()}},
        device,
        args.warmup,
        args.repeats,
    )
    tokens = args.batch_size * args.sequence_length
    print(
        f"# Masked ELMo d={dim}, {cells} cells, 2 layers, vocabulary {args.vocab_size}, "
        f"dropout {args.dropout}; batch {args.batch_size} x {args.sequence_length}; median of {args.repeats}"
    )
    rows = []
    # On a GPU "auto" is torch's nn.LSTM (cuDNN), as the plugin's encoder there: both export rows run it.
    sides = (("auto", "export, lstm_implementation auto"), ("torch", "export, torch's nn.LSTM"))
    for task, seconds in (("Trainer-like step", training), ("inference (L + 1 layers)", inference)):
        for name, label in sides:
            ratio = seconds[name] / seconds["plugin"]
            target = f"≤{TARGET:.2f}x" if name == "auto" else "–"
            met = common.verdict(ratio, TARGET, higher_is_better=False) if name == "auto" else ""
            speeds = [tokens / seconds["plugin"], tokens / seconds[name]]
            rows.append([task, label, *speeds, f"{ratio:.3f}x", target, met])
    header = ["work", "side", "plugin tok/s", "export tok/s", "export time / plugin's", "target", ""]
    common.print_table(header, rows)


if __name__ == "__main__":
    main()
