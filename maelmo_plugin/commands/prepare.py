"""
The `maelmo-prepare` subcommand: tokenizes a pre-training corpus once into a token store, which every run and
every worker then opens instead of tokenizing the text again.

    allennlp maelmo-prepare CORPUS [CORPUS ...] --vocab VOCAB --output-dir STORE [--document-start-pattern RE]
                            [--processes N] [--force]

Give the store as the config's data path (`MAELMO_TRAIN_PATH=STORE`); the reader's vocabulary must be the
one the store was prepared with, or the run stops at start.
"""

import argparse
import os

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from maelmo_plugin.common.wordpiece import WordpieceTokenizer
from maelmo_plugin.lm.dataset_readers.mlm_corpus import MlmCorpusReader
from maelmo_plugin.lm.dataset_readers.token_store import TokenStore


@Subcommand.register("maelmo-prepare")
class Prepare(Subcommand):
    """
    Registered as a `Subcommand` with name "maelmo-prepare".

    Reads the corpus as the `maelmo_mlm_corpus` reader does (paragraphs, `[CLS]`/`[SEP]`, documents) and
    writes a `maelmo_plugin.lm.dataset_readers.token_store` directory.
    """

    requires_plugins = False

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = "Tokenize a Masked ELMo pre-training corpus once, into a token store for every run."
        subparser = parser.add_parser(self.name, description=description, help=description)
        subparser.add_argument("corpus", nargs="+", help="plain-text files or globs (quote globs)")
        subparser.add_argument(
            "--vocab", required=True, help="the word-piece vocab.txt, tokenizer directory or hub name"
        )
        subparser.add_argument("--output-dir", required=True, help="the store's directory (must not exist)")
        subparser.add_argument(
            "--document-start-pattern", default=None, help="as the reader's: a line that starts a document"
        )
        subparser.add_argument(
            "--processes",
            type=int,
            default=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
            help="tokenize with this many processes (default: every core this process may use); the store is "
            "the same for any number",
        )
        subparser.add_argument("--force", action="store_true", help="replace an existing store")

        def run(args: argparse.Namespace) -> None:
            try:
                tokenizer = WordpieceTokenizer(args.vocab)
                reader = MlmCorpusReader(tokenizer, document_start_pattern=args.document_start_pattern)
                store = TokenStore.prepare(
                    reader, args.corpus, args.output_dir, force=args.force, processes=args.processes
                )
            except (FileNotFoundError, ConfigurationError) as error:
                subparser.error(str(error))
            print(
                f"Wrote a token store of {store.num_documents} documents and {store.num_tokens} word-pieces "
                f"to {args.output_dir}"
            )

        subparser.set_defaults(func=run)
        return subparser
