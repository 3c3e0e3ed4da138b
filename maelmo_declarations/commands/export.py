"""`maelmo-export`'s arguments and the refusals that need no archive opened (`maelmo_plugin/commands/export.py`)."""

import argparse

from maelmo_declarations.command import Command
from maelmo_declarations.export_paths import check_export_paths
from maelmo_declarations.options import layer_argument
from maelmo_declarations.refusals import Refusal

NAME = "maelmo-export"


def add_arguments(subparser: argparse.ArgumentParser) -> None:
    subparser.add_argument(
        "archive_file", help="a model.tar.gz (or serialization directory) of maelmo_masked_elmo_lm"
    )
    subparser.add_argument(
        "output_dir", help="the directory to write (created; new, empty, or a previous export with --force)"
    )
    subparser.add_argument(
        "--force",
        action="store_true",
        help="replace a previous export in OUT_DIR (a directory holding anything else is refused and kept)",
    )
    subparser.add_argument(
        "--sentence-transformers",
        action="store_true",
        help="also write modules.json and the pooling config, so that OUT_DIR loads with "
        "SentenceTransformer(OUT_DIR, trust_remote_code=True): the mean of the top layer over the "
        "word-pieces (Masked ELMo, --format hf only)",
    )
    subparser.add_argument(
        "--sentence-layer",
        type=layer_argument,
        default=None,
        help="with --sentence-transformers, the layer whose mean is the sentence vector: 0 = the "
        "embeddings, -1 = the top layer (the default), or 'mix' (the mean of all layers)",
    )
    subparser.add_argument(
        "--format",
        choices=("hf", "onnx"),
        default="hf",
        help="hf: a Hugging Face model directory (the default); onnx: model.onnx of the encoder and the "
        "tokenizer files, for ONNX Runtime (needs pip install 'maelmo_plugin[onnx]')",
    )
    subparser.add_argument(
        "--quantize",
        choices=("int8",),
        default=None,
        help="with --format onnx, also write model_int8.onnx: model.onnx with every MatMul dynamically "
        "quantized to int8 by ONNX Runtime (faster on a CPU; cosine about 0.9999 to model.onnx's "
        "layers, docs/onnx.md)",
    )


def check(args: argparse.Namespace) -> None:
    if args.sentence_transformers and args.format == "onnx":
        raise Refusal(
            "--sentence-transformers goes with --format hf: it loads the export through transformers"
        )
    if args.quantize is not None and args.format != "onnx":
        raise Refusal("--quantize goes with --format onnx: it quantizes the ONNX model")
    if args.sentence_layer is not None and not args.sentence_transformers:
        raise Refusal("--sentence-layer goes with --sentence-transformers: give both, or neither")
    check_export_paths(args.archive_file, args.output_dir, args.force)


COMMAND = Command(
    name=NAME,
    description="Export a Masked ELMo archive as a Hugging Face model directory (trust_remote_code).",
    add_arguments=add_arguments,
    check=check,
    job="maelmo_plugin.commands.export:run",
    requires_plugins=True,
)
