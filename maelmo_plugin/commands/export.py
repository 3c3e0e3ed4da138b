"""
The `maelmo-export` job: writes a Masked ELMo archive as a Hugging Face model directory, which
`transformers` (4.x or 5.x) loads with `trust_remote_code=True`, without AllenNLP or this plugin; or, with
`--format onnx`, as an ONNX model of the encoder and its tokenizer, which ONNX Runtime runs without torch.

    allennlp maelmo-export ARCHIVE OUT_DIR [--format {hf,onnx} [--quantize int8]] [--sentence-transformers
                           [--sentence-layer N|mix]] [--force]

With `--sentence-transformers`, the Hugging Face directory also loads as a `SentenceTransformer`
(`trust_remote_code=True`): mean pooling of one layer (`--sentence-layer`, the top one by default) or of
the mean of all layers, the plugin's `embed(..., layer=N, pool="sentence")` vectors. With `--quantize int8`,
the ONNX export also holds model_int8.onnx, its MatMuls dynamically quantized to int8.

See `maelmo_plugin.hf.export.export_archive` (docs/hf_export.md) and
`maelmo_plugin.onnx.export.export_onnx_archive` (docs/onnx.md) for what OUT_DIR holds. Declared in
`maelmo_declarations/commands/export.py`.
"""

import argparse


def run(args: argparse.Namespace) -> None:
    """
    Exports a `maelmo_masked_elmo_lm` archive to a Hugging Face model directory (config, safetensors weights,
    modeling code, tokenizer, model card), or with `--format onnx` to an ONNX model of the encoder and the
    tokenizer files.
    """
    # Imported here so that `allennlp --help` does not pay for building the HF classes.
    from maelmo_plugin.hf.export import export_archive
    from maelmo_plugin.onnx.export import export_onnx_archive

    if args.format == "onnx":
        export_onnx_archive(args.archive_file, args.output_dir, force=args.force, quantize=args.quantize)
        models = "model.onnx and model_int8.onnx" if args.quantize else "model.onnx"
        print(f"Exported {args.archive_file} to {args.output_dir} (run {models} with onnxruntime)")
        return
    export_archive(
        args.archive_file,
        args.output_dir,
        force=args.force,
        sentence_transformers=args.sentence_transformers,
        sentence_layer=-1 if args.sentence_layer is None else args.sentence_layer,
    )
    also = " or SentenceTransformer" if args.sentence_transformers else ""
    print(
        f"Exported {args.archive_file} to {args.output_dir} (load with transformers{also}, trust_remote_code=True)"
    )
