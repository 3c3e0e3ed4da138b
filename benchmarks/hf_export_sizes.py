"""
Export size against archive size for a Masked ELMo of the paper's size (d 768, 4096 cells per direction,
L 2, 28,996 word-pieces like bert-base-cased), randomly initialised, which weighs what a trained one does:
the figures of docs/hf_export.md.

    .venv/bin/python benchmarks/hf_export_sizes.py [--dim 768] [--cells 4096] [--layers 2] [--vocab-size 28996]
"""

import argparse
import os
import tempfile
import time

import torch
from allennlp.common import Params
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.models.archival import archive_model

import maelmo_plugin  # noqa: F401  registers the "type" names
from maelmo_files.common.special_tokens import REQUIRED_SPECIAL_TOKENS
from maelmo_plugin.hf.export import export_archive


def random_archive(directory: str, dim: int, cells: int, layers: int, vocab_size: int) -> str:
    """A model.tar.gz of a randomly initialised `maelmo_masked_elmo_lm` of these sizes."""
    vocab_file = os.path.join(directory, "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as vocab:
        entries = [
            *REQUIRED_SPECIAL_TOKENS,
            *(f"w{n}" for n in range(vocab_size - len(REQUIRED_SPECIAL_TOKENS))),
        ]
        vocab.write("\n".join(entries) + "\n")
    config = {
        "vocabulary": {"type": "maelmo_wordpiece", "vocab": vocab_file},
        "dataset_reader": {
            "type": "maelmo_mlm_corpus",
            "tokenizer": {"type": "maelmo_wordpiece", "vocab": vocab_file},
        },
        "train_data_path": "none (random weights)",
        "model": {
            "type": "maelmo_masked_elmo_lm",
            "encoder": {"type": "maelmo_masked_elmo", "input_dim": dim, "cells": cells, "num_layers": layers},
        },
    }
    serialization_dir = os.path.join(directory, "run")
    os.makedirs(serialization_dir)
    Params(config).to_file(os.path.join(serialization_dir, "config.json"))
    vocabulary = Vocabulary.from_params(Params(dict(config["vocabulary"])))
    vocabulary.save_to_files(os.path.join(serialization_dir, "vocabulary"))
    model = Model.from_params(vocab=vocabulary, params=Params(dict(config["model"])))
    torch.save(model.state_dict(), os.path.join(serialization_dir, "best.th"))
    archive_model(serialization_dir)
    return os.path.join(serialization_dir, "model.tar.gz")


def directory_size(directory: str) -> int:
    return sum(os.path.getsize(os.path.join(directory, name)) for name in os.listdir(directory))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--cells", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vocab-size", type=int, default=28996)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        archive = random_archive(directory, args.dim, args.cells, args.layers, args.vocab_size)
        start = time.perf_counter()
        export = export_archive(archive, os.path.join(directory, "export"))
        seconds = time.perf_counter() - start
        weights = os.path.getsize(os.path.join(export, "model.safetensors"))
        print(f"sizes d {args.dim}, cells {args.cells}, L {args.layers}, vocabulary {args.vocab_size}")
        print(f"archive model.tar.gz: {os.path.getsize(archive) / 2**20:.1f} MiB")
        size = directory_size(export)
        print(f"export directory: {size / 2**20:.1f} MiB (model.safetensors {weights / 2**20:.1f} MiB)")
        print(f"export time (load, convert, check, write): {seconds:.1f} s")


if __name__ == "__main__":
    main()
