"""
The `maelmo-export` subcommand: writes a Masked ELMo archive as a Hugging Face model directory, which
`transformers` (4.x or 5.x) loads with `trust_remote_code=True`, without AllenNLP or this plugin.

    allennlp maelmo-export ARCHIVE OUT_DIR [--force]

See `maelmo_plugin.hf.export.export_archive` for what OUT_DIR holds, and docs/hf_export.md.
"""
import argparse

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError


@Subcommand.register("maelmo-export")
class Export(Subcommand):
    """
    Registered as a `Subcommand` with name "maelmo-export".

    Exports a `maelmo_masked_lm` archive to a Hugging Face model directory (config, safetensors weights,
    modeling code, tokenizer, model card).
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = "Export a Masked ELMo archive as a Hugging Face model directory (trust_remote_code)."
        subparser = parser.add_parser(self.name, description=description, help=description)
        subparser.add_argument(
            "archive_file", help="a model.tar.gz (or serialization directory) of maelmo_masked_lm"
        )
        subparser.add_argument("output_dir", help="the directory to write (created; must be new or empty)")
        subparser.add_argument(
            "--force", action="store_true", help="replace OUT_DIR and everything in it if it is not empty"
        )

        def run(args: argparse.Namespace) -> None:
            # Imported here so that `allennlp --help` does not pay for building the HF classes.
            from maelmo_plugin.hf.export import export_archive

            # A user error (wrong archive, existing directory) gets argparse's one-line message.
            try:
                export_archive(args.archive_file, args.output_dir, force=args.force)
            except (ConfigurationError, FileNotFoundError) as error:
                subparser.error(str(error))
            print(f"Exported {args.archive_file} to {args.output_dir} (load with trust_remote_code=True)")

        subparser.set_defaults(func=run)
        return subparser
