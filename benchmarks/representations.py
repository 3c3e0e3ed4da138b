"""
Figure 7: sentences/s of the representation dump (`maelmo_plugin.api.MaskedElmo.embed`, which runs the
`maelmo_representations` predictor: word-piece tokenisation, `[CLS] ... [SEP]`, the encoder from zero
states, all L + 1 layers back as numpy) at batch 1 and at batch 64. There is no target: the figure says
what batching buys.

The archive is made in-process from a freshly initialised `maelmo_masked_elmo_lm` (the speed does not depend
on training), with the bert-base-cased vocabulary when ../shared/data holds it. The sentences are the
WikiText-2 training set's first ones (split at " . "), else the sample corpus's lines.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/representations.py
"""

import json
import os
import tempfile

import common
import torch
from allennlp.models.archival import archive_model

from maelmo_plugin.api import MaskedElmo
from maelmo_plugin.common.wordpiece import WordpieceVocabulary

BATCH_SIZES = (1, 64)


def make_archive(directory: str, vocab_file: str, dim: int, cells: int) -> str:
    """A model.tar.gz as `allennlp train` writes it: config.json, vocabulary/, weights."""
    config = {
        "vocabulary": {"type": "maelmo_wordpiece", "vocab": vocab_file},
        "dataset_reader": {
            "type": "maelmo_mlm_corpus",
            "tokenizer": {"type": "maelmo_wordpiece", "vocab": vocab_file},
        },
        "model": {"type": "maelmo_masked_elmo_lm", "encoder": {"input_dim": dim, "cells": cells}},
    }
    vocab = WordpieceVocabulary.from_wordpiece_vocab(vocab_file)
    model = common.masked_elmo_lm(vocab.get_vocab_size("wordpieces"), dim, cells)
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
    found = []
    with open(path, encoding="utf-8") as corpus:
        for line in corpus:
            # WikiText's headings (" = Title = ") are not sentences.
            if line.strip() and not line.lstrip().startswith("="):
                found.extend(part.strip() + " ." for part in line.split(separator) if len(part.split()) >= 3)
            if len(found) >= count:
                return found[:count], vocab
    return found, vocab


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--size", default="512x2048", help="d x cells (--paper: 768x4096)")
    parser.add_argument("--sentences", type=int, default=64)
    parser.add_argument(
        "--paper", action="store_true", help="d=768, 4096 cells (over 10 minutes on a CPU core)"
    )
    parser.set_defaults(repeats=1)
    args = parser.parse_args()
    if args.paper:
        args.size = "768x4096"
    device = common.setup(args)
    dim, cells = common.parse_size(args.size)
    texts, vocab_file = sentences(args.sentences)
    cuda_device = (device.index or 0) if device.type == "cuda" else -1
    with tempfile.TemporaryDirectory() as directory:
        elmo = MaskedElmo.from_archive(
            make_archive(directory, vocab_file, dim, cells), cuda_device=cuda_device
        )
    runs = {
        batch_size: (lambda size=batch_size: elmo.embed(texts, batch_size=size)) for batch_size in BATCH_SIZES
    }
    seconds = common.interleaved(runs, device, args.warmup, args.repeats)
    pieces = sum(len(vectors[0]) for vectors in elmo.embed(texts[:64], batch_size=64))
    print(
        f"# d={dim}, {cells} cells, {len(texts)} sentences (first 64: {pieces / 64:.1f} word-pieces each with "
        f"[CLS]/[SEP]), all layers returned, median of {args.repeats} after {args.warmup} warm-up"
    )
    common.print_table(
        ["batch size", "sentences/s", "seconds", "vs batch 1"],
        [
            [size, len(texts) / seconds[size], seconds[size], f"{seconds[1] / seconds[size]:.2f}x"]
            for size in BATCH_SIZES
        ],
    )


if __name__ == "__main__":
    main()
