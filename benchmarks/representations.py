"""
Figure 7: sentences/s of the representation dump (`maelmo_plugin.api.MaskedElmo.embed`, which runs the
`maelmo_representations` predictor: word-piece tokenisation, `[CLS] ... [SEP]`, the encoder from zero
states, all L + 1 layers back as numpy) at batch 1 and at batch 64. There is no target: the figure says
what batching buys.

The archive is made in-process from a freshly initialised `maelmo_masked_elmo_lm` (the speed does not depend
on training), with the bert-base-cased vocabulary when ../shared/data holds it. The sentences are the
WikiText-2 training set's first ones (split at " . "), else the sample corpus's lines.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/representations.py [--paper]

`--record FILE` measures the record's grid (RECORD_GRID) in one invocation, on a CPU: 512/2048 on the first 64
sentences, and 768/4096 on the first 128 with the CPU recurrence and with torch's CPU LSTM (the same model with
`cpu_recurrence: false`), each size's sides interleaved; 15 to 20 minutes on one core:

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/representations.py \\
        --record benchmarks/results/records/representations.json
"""

import json
import os
import tempfile

import common
import core_load
import torch
from allennlp.models.archival import archive_model

from maelmo_plugin.api import MaskedElmo
from maelmo_plugin.common.wordpiece import WordpieceVocabulary

BATCH_SIZES = (1, 64)
# The record's rows name the recurrence by these (cpu_recurrence True or False).
KERNELS = {True: "the CPU recurrence", False: "torch's CPU LSTM"}
# The record's grid: (d x cells, sentences, the kernels), as its two earlier commands ran them (the default,
# and --paper --sentences 128).
RECORD_GRID = (("512x2048", 64, (True,)), ("768x4096", 128, (True, False)))
TITLE = "Representation dump, batch 64 against batch 1, CPU"
HEADER = ["size", "kernel", "batch size", "sentences/s", "seconds for the sentences", "vs batch 1"]


def make_archive(directory: str, vocab_file: str, dim: int, cells: int, cpu_recurrence: bool = True) -> str:
    """A model.tar.gz as `allennlp train` writes it: config.json, vocabulary/, weights."""
    encoder = {"type": "maelmo_masked_elmo", "input_dim": dim, "cells": cells}
    if not cpu_recurrence:
        encoder["cpu_recurrence"] = False
    config = {
        "vocabulary": {"type": "maelmo_wordpiece", "vocab": vocab_file},
        "dataset_reader": {
            "type": "maelmo_mlm_corpus",
            "tokenizer": {"type": "maelmo_wordpiece", "vocab": vocab_file},
        },
        "model": {"type": "maelmo_masked_elmo_lm", "encoder": encoder},
    }
    vocab = WordpieceVocabulary.from_wordpiece_vocab(vocab_file)
    model = common.masked_elmo_lm(
        vocab.get_vocab_size("wordpieces"), dim, cells, cpu_recurrence=cpu_recurrence
    )
    with open(os.path.join(directory, "config.json"), "w") as out:
        json.dump(config, out)
    model.vocab.save_to_files(os.path.join(directory, "vocabulary"))
    torch.save(model.state_dict(), os.path.join(directory, "best.th"))
    return archive_model(directory)


def sentences(count: int):
    """(sentences, vocabulary file): WikiText-2's first sentences with bert-base-cased, else the sample's."""
    if os.path.exists(common.WIKITEXT2_TRAIN) and os.path.exists(common.BERT_VOCAB):
        path, vocab, separator = common.WIKITEXT2_TRAIN, common.BERT_VOCAB, " . "
    else:
        path, vocab, separator = (
            str(common.SAMPLE_DIR / "train.txt"),
            str(common.SAMPLE_DIR / "vocab.txt"),
            "\n",
        )
    found = common.wikitext_sentences(
        path, count, split_at=separator, min_words=3, period=True, strip_lines=False
    )
    return found, vocab


def measure(size: str, count: int, kernels, args, device: torch.device) -> tuple[list[list], dict]:
    """One size's rows (HEADER's cells) and figures: each kernel at each batch size, all interleaved."""
    dim, cells = common.parse_size(size)
    texts, vocab_file = sentences(count)
    cuda_device = (device.index or 0) if device.type == "cuda" else -1
    elmos = {}
    with tempfile.TemporaryDirectory() as directory:
        for kernel in kernels:
            folder = os.path.join(directory, "cpu_recurrence" if kernel else "torch_lstm")
            os.makedirs(folder)
            archive_file = make_archive(folder, vocab_file, dim, cells, cpu_recurrence=kernel)
            elmos[kernel] = MaskedElmo.from_archive(archive_file, cuda_device=cuda_device)
    runs = {
        (kernel, batch_size): (lambda elmo=elmo, size=batch_size: elmo.embed(texts, batch_size=size))
        for kernel, elmo in elmos.items()
        for batch_size in BATCH_SIZES
    }
    seconds = common.interleaved(runs, device, args.warmup, args.repeats)
    first = elmos[kernels[0]].embed(texts, batch_size=max(BATCH_SIZES))
    pieces = sum(len(vectors[0]) for vectors in first) / len(texts)
    label = size.replace("x", "/")
    print(
        f"# d={dim}, {cells} cells, {len(texts)} sentences ({pieces:.1f} word-pieces each with [CLS]/[SEP]), "
        f"{len(first[0])} layers returned, median of {args.repeats} after {args.warmup} warm-up"
    )
    rows, measured = [], {"sentences": len(texts), "word_pieces_per_sentence": pieces, "seconds": {}}
    for kernel in kernels:
        name = KERNELS[kernel] if device.type == "cpu" else "cuDNN"
        for batch_size in BATCH_SIZES:
            took = seconds[(kernel, batch_size)]
            measured["seconds"][f"{name}; {batch_size}"] = took
            rows.append(
                [
                    label,
                    name,
                    batch_size,
                    len(texts) / took,
                    f"{common.significant(took, 3)} ({len(texts)})",
                    f"{seconds[(kernel, BATCH_SIZES[0])] / took:.2f}x",
                ]
            )
    measured["layers"] = len(first[0])
    return rows, measured


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--size", default="512x2048", help="d x cells (--paper: 768x4096)")
    parser.add_argument(
        "--sentences", type=int, help="default 64; with --record, instead of the grid's (a quick check)"
    )
    parser.add_argument(
        "--paper", action="store_true", help="d=768, 4096 cells (over 10 minutes on a CPU core)"
    )
    parser.add_argument(
        "--record", help="measure the record's grid (RECORD_GRID) and write it here, on a CPU"
    )
    parser.set_defaults(repeats=1)
    args = parser.parse_args()
    if args.paper:
        args.size = "768x4096"
    if args.record and (args.paper or args.size != "512x2048" or args.device != "cpu"):
        parser.error(
            "--record measures the record's sizes (RECORD_GRID) on a CPU: no --paper, --size, --device"
        )
    device = common.setup(args)
    grid = RECORD_GRID if args.record else ((args.size, 64, (True,)),)
    rows, data = [], {}
    use = core_load.CoreUse().start()
    for size, count, kernels in grid:
        size_rows, data[size.replace("x", "/")] = measure(
            size, args.sentences or count, kernels, args, device
        )
        rows += size_rows
    use.stop()
    use.warn_if_busy("measured")
    common.print_table(HEADER, rows)
    if args.record:
        counts = " and ".join(f"{size['sentences']}" for size in data.values())
        pieces = " and ".join(f"{size['word_pieces_per_sentence']:.0f}" for size in data.values())
        notes = (
            f"`MaskedElmo.embed`, all {next(iter(data.values()))['layers']} layers, on WikiText-2's first "
            f"sentences ({counts} of them: {pieces} word-pieces on average, [CLS] and [SEP] included), a freshly "
            f"initialised model with bert-base-cased's vocabulary (speed does not depend on training); the median "
            f"of {args.repeats} timed pass(es) after {args.warmup} warm-up, each size's sides interleaved. torch's "
            "CPU LSTM: the same model with `cpu_recurrence: false`. At batch 1 every step reads the recurrent "
            "weights for one vector, which batching shares."
        )
        common.write_record(
            args.record,
            TITLE,
            f"{common.machine_description(device)}; {args.threads} torch thread(s); other cores: "
            f"{use.describe() or '?'}",
            HEADER,
            rows,
            data=data,
            notes=notes,
        )


if __name__ == "__main__":
    main()
