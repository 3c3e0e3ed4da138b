"""
The `maelmo-export` subcommand: writes a Masked ELMo archive as a Hugging Face model directory, which
`transformers` (4.x or 5.x) loads with `trust_remote_code=True`, without AllenNLP or this plugin; or, with
`--format onnx`, as an ONNX model of the encoder and its tokenizer, which ONNX Runtime runs without torch.

    allennlp maelmo-export ARCHIVE OUT_DIR [--format {hf,onnx} [--quantize int8]] [--sentence-transformers
                           [--sentence-layer N|mix]] [--force]

With `--sentence-transformers`, the Hugging Face directory also loads as a `SentenceTransformer`
(`trust_remote_code=True`): mean pooling of one layer (`--sentence-layer`, the top one by default) or of
the mean of all layers, the plugin's `embed(..., layer=N, pool="sentence")` vectors. With `--quantize int8`,
the ONNX export also holds model_int8.onnx, its MatMuls dynamically quantized to int8.

See `maelmo_plugin.hf.export.export_archive` (docs/hf_export.md) and
`maelmo_plugin.onnx.export.export_onnx_archive` (docs/onnx.md) for what OUT_DIR holds.
"""

import argparse

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from maelmo_plugin.commands.arguments import layer_argument


@Subcommand.register("maelmo-export")
class Export(Subcommand):
    """
    Registered as a `Subcommand` with name "maelmo-export".

    Exports a `maelmo_masked_elmo_lm` archive to a Hugging Face model directory (config, safetensors weights,
    modeling code, tokenizer, model card), or with `--format onnx` to an ONNX model of the encoder and the
    tokenizer files.
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = "Export a Masked ELMo archive as a Hugging Face model directory (trust_remote_code)."
        subparser = parser.add_parser(self.name, description=description, help=description)
        _add_arguments(subparser)
        subparser.set_defaults(func=lambda args: _run(args, subparser))
        return subparser


def _add_arguments(subparser: argparse.ArgumentParser) -> None:
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


def _run(args: argparse.Namespace, subparser: argparse.ArgumentParser) -> None:
    # Imported here so that `allennlp --help` does not pay for building the HF classes.
    from maelmo_plugin.hf.export import export_archive
    from maelmo_plugin.onnx.export import export_onnx_archive

    if args.sentence_transformers and args.format == "onnx":
        subparser.error(
            "--sentence-transformers goes with --format hf: it loads the export through transformers"
        )
    if args.quantize is not None and args.format != "onnx":
        subparser.error("--quantize goes with --format onnx: it quantizes the ONNX model")
    if args.sentence_layer is not None and not args.sentence_transformers:
        subparser.error("--sentence-layer goes with --sentence-transformers: give both, or neither")
    # A user error (wrong archive, existing directory) gets argparse's one-line message.
    try:
        if args.format == "onnx":
            export_onnx_archive(args.archive_file, args.output_dir, force=args.force, quantize=args.quantize)
        else:
            export_archive(
                args.archive_file,
                args.output_dir,
                force=args.force,
                sentence_transformers=args.sentence_transformers,
                sentence_layer=-1 if args.sentence_layer is None else args.sentence_layer,
            )
    except (ConfigurationError, FileNotFoundError) as error:
        subparser.error(str(error))
    if args.format == "onnx":
        models = "model.onnx and model_int8.onnx" if args.quantize else "model.onnx"
        print(f"Exported {args.archive_file} to {args.output_dir} (run {models} with onnxruntime)")
    else:
        also = " or SentenceTransformer" if args.sentence_transformers else ""
        print(
            f"Exported {args.archive_file} to {args.output_dir} (load with transformers{also}, "
            f"trust_remote_code=True)"
        )
