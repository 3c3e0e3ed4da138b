"""
The learning rate each encoder needs on the small config (issue 73 item 2): `lm/pretrain_small.jsonnet` on the
sample corpus, its 10 epochs and Adam, with `model.encoder` swapped for AllenNLP's `lstm`, `gru` and
`pytorch_transformer` at sizes that match the built-in's d = 128 (two layers each), at each of `--rates`,
against Masked ELMo's own encoder at its 1e-3. The figure is the final validation perplexity (lower is better)
and its accuracy, against the unigram floor of the sample corpus: what a model that learned nothing but the
word-pieces' frequencies scores. An encoder's rate is the reproduction's choice (`reproduction/tuning.py`: the
lowest rate within 1% of the lowest final perplexity) among its rates below 0.8 times the floor; an encoder
that stayed above it at every rate gets none.

    .venv/bin/python benchmarks/encoder_learning_rates.py --work-dir runs/encoder_lr \\
        --record benchmarks/results/records/encoder_learning_rates.json

Each run is `allennlp train` of a variant file in `--work-dir`, one after another; a run already finished
there is read, not trained again, and one stopped half-way continues (`-r`), so the sweep resumes when run
again. `pretrain_common.libsonnet`'s `encoder_learning_rates` quotes the rates this record chose.
"""

import argparse
import json
import os
import subprocess
import sys

import common

from maelmo_plugin.arena.rates import lowest_tied_rate
from maelmo_plugin.arena.unigram_floor import LEARNED, unigram_floor  # a rate counts only below LEARNED x it

SAMPLE = os.path.join(common.REPOSITORY, "training_config", "lm", "sample")
SMALL = os.path.join(common.REPOSITORY, "training_config", "lm", "pretrain_small.jsonnet")
TITLE = "The learning rate of each encoder on the small config (final validation perplexity)"
# AllenNLP's own encoders at the built-in's width (d = 128 in and out), two layers each.
ENCODERS = {
    "lstm": {"type": "lstm", "input_size": 128, "hidden_size": 64, "num_layers": 2, "bidirectional": True},
    "gru": {"type": "gru", "input_size": 128, "hidden_size": 64, "num_layers": 2, "bidirectional": True},
    "pytorch_transformer": {
        "type": "pytorch_transformer",
        "input_dim": 128,
        "num_layers": 2,
        "num_attention_heads": 4,
        "feedforward_hidden_dim": 512,
        "positional_encoding": "sinusoidal",
        "dropout_prob": 0.1,
    },
}


def variant(encoder: str, rate: float) -> str:
    """A variant of the small config as a user writes one: its encoder swapped, its learning rate set."""
    swapped = (
        f"model+: {{ encoder: {json.dumps(ENCODERS[encoder])} }}, " if encoder != "maelmo_masked_elmo" else ""
    )
    return f'(import "{SMALL}") + {{ {swapped}trainer+: {{ optimizer+: {{ lr: {rate} }} }} }}\n'


def train(work_dir: str, encoder: str, rate: float) -> dict:
    """The run's metrics.json, training it first where it has not finished."""
    name = f"{encoder}-lr{rate:g}"
    run_dir = os.path.join(work_dir, name)
    metrics = os.path.join(run_dir, "metrics.json")
    if not os.path.isfile(metrics):
        config = os.path.join(work_dir, f"{name}.jsonnet")
        with open(config, "w", encoding="utf-8") as stream:
            stream.write(variant(encoder, rate))
        resume = ["-r"] if os.path.isdir(run_dir) else []
        command = [sys.executable, "-m", "allennlp", "train", config, "-s", run_dir, *resume]
        print(f"# {name}: {' '.join(command)}", flush=True)
        subprocess.run(
            [*command, "--include-package", "maelmo_plugin"], check=True, stdout=subprocess.DEVNULL
        )
    with open(metrics, encoding="utf-8") as stream:
        return json.load(stream)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rates", type=float, nargs="+", default=[1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2])
    parser.add_argument("--work-dir", required=True, help="where the runs are kept (the sweep resumes there)")
    parser.add_argument("--record", default=None, help="write the record (common.write_record) to this path")
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    arms = [("maelmo_masked_elmo", 1e-3)] + [(encoder, rate) for encoder in ENCODERS for rate in args.rates]
    measured = {(encoder, rate): train(args.work_dir, encoder, rate) for encoder, rate in arms}
    floor = unigram_floor(*(os.path.join(SAMPLE, name) for name in ("train.txt", "valid.txt", "vocab.txt")))
    # The arena's rule (maelmo_plugin/arena/rates.py: the lowest rate within 1% of the lowest final perplexity),
    # among the rates that learned.
    best: dict[str, float] = {}
    for encoder in {encoder for encoder, _ in measured}:
        runs = [
            (rate, metrics["validation_perplexity"])
            for (name, rate), metrics in measured.items()
            if name == encoder and metrics["validation_perplexity"] < LEARNED * floor
        ]
        choice = lowest_tied_rate(runs, rate=lambda run: run[0], final=lambda run: run[1])
        if choice is not None:
            best[encoder] = choice[0]
    header = [
        "encoder",
        "learning rate",
        "validation perplexity",
        "x unigram floor",
        "validation accuracy",
        "chosen",
    ]
    rows = [
        [
            encoder,
            f"{rate:g}",
            f"{metrics['validation_perplexity']:.1f}",
            f"{metrics['validation_perplexity'] / floor:.2f}",
            f"{metrics['validation_accuracy']:.3f}",
            "yes" if best.get(encoder) == rate else "",
        ]
        for (encoder, rate), metrics in measured.items()
    ]
    common.print_table(header, rows)
    print(f"unigram floor: {floor:.1f}; no rate learned: {sorted(set(ENCODERS) - set(best))}")
    if args.record:
        common.write_record(
            args.record,
            TITLE,
            "the sample corpus, lm/pretrain_small.jsonnet (10 epochs, Adam, decay 0.95 an epoch), seed 13370",
            header,
            rows,
            data={
                "encoders": ENCODERS,
                "chosen": best,
                "unigram_floor": floor,
                "metrics": {
                    f"{encoder}-lr{rate:g}": metrics for (encoder, rate), metrics in measured.items()
                },
            },
            notes=(
                "Each encoder's rate by the reproduction's rule (reproduction/tuning.py's chosen: the lowest rate "
                "within 1% of the lowest final validation perplexity), among the rates whose final perplexity is "
                f"below {LEARNED} times the unigram floor (maelmo_plugin/arena/unigram_floor.py on the sample corpus); "
                "an encoder with no such rate has none. One seed, the final epoch's figures."
            ),
        )


if __name__ == "__main__":
    main()
