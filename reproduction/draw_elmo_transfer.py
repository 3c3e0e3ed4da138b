"""
The table of the `elmo_transfer` campaign (docs/reproduction.md, section 1): why the arena's stateful ELMo biLM
fine-tunes below the random encoder. One row per SST-2 fine-tune (the arena's protocol, seed 1): that biLM
fine-tuned (arena_glue's run) and frozen, its architecture untrained, the tuning sweep's biLMs at three rates,
and the references from arena_glue (Masked ELMo pre-trained and untrained) and Masked ELMo frozen; beside each,
the sizes of the LSTM weights it started from (`lstm_weights.py`), the largest over its LSTMs.
"""

import json
from pathlib import Path

# (claim, run, what it is, the elmo_transfer run whose encoder_weights.json holds its starting weights, or None)
ROWS = (
    (
        "arena_glue",
        "elmo_stateful-sst2-seed1",
        "ELMo biLM, the arena's stateful (Adam 8e-3, all of WikiText-2), fine-tuned",
        "arena-fz",
    ),
    ("elmo_transfer", "arena-fz", "ELMo biLM, the arena's stateful, frozen", "arena-fz"),
    ("elmo_transfer", "untrained-ft", "ELMo biLM's architecture, untrained, fine-tuned", "untrained-ft"),
    *(
        (
            "elmo_transfer",
            f"sweep-lr{rate}-ft",
            f"ELMo biLM of the tuning sweep, Adam {rate}, fine-tuned",
            f"sweep-lr{rate}-ft",
        )
        for rate in ("8e-3", "2e-3", "5e-4")
    ),
    ("arena_glue", "masked_elmo-sst2-seed1", "Masked ELMo, the arena's, fine-tuned", "masked_elmo-arena-fz"),
    ("elmo_transfer", "masked_elmo-arena-fz", "Masked ELMo, the arena's, frozen", "masked_elmo-arena-fz"),
    (
        "arena_glue",
        "random-sst2-seed1",
        "Masked ELMo's architecture, untrained, fine-tuned (the random encoder)",
        None,
    ),
)


def _read(path: Path):
    return json.loads(path.read_text()) if path.exists() else None


def transfer_table(results: Path) -> str:
    """Markdown: each row's SST-2 dev accuracy at its last epoch and at its best (dev-chosen) one, training accuracy, the perplexity of a sweep biLM, and the sizes
    of its starting LSTM weights; "–" where a run is not kept yet."""
    lines = [
        "### Why the ELMo biLM fine-tunes below the random encoder: SST-2, seed 1 (elmo_transfer)",
        "",
        "| encoder | SST-2 dev acc (last epoch) | at the best (dev-chosen) epoch | training acc (last epoch) | "
        "largest LSTM input-weight norm | largest recurrent spectral norm (of a gate) |",
        "|---|---|---|---|---|---|",
    ]
    for claim, run, label, weights_run in ROWS:
        dev = _read(results / claim / run / "dev_metrics.json")
        metrics = _read(results / claim / run / "metrics.json")
        sizes = weights_run and _read(results / "elmo_transfer" / weights_run / "encoder_weights.json")
        cells = [
            f"{100 * metrics['validation_accuracy']:.1f}"
            if metrics and "validation_accuracy" in metrics
            else "–",
            f"{100 * dev['accuracy']:.1f}" if dev else "–",
            f"{100 * metrics['training_accuracy']:.1f}" if metrics else "–",
        ]
        for key in ("input_norm", "recurrent_spectral_norm"):
            cells.append(f"{max(lstm[key] for lstm in sizes.values()):.1f}" if sizes else "–")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
