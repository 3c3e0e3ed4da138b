"""
The `maelmo-prepare` subcommand: tokenizes a pre-training corpus once into a token store, which every run and
every worker then opens instead of tokenizing the text again.

    allennlp maelmo-prepare CORPUS [CORPUS ...] --vocab VOCAB --output-dir STORE [--document-start-pattern RE]
                            [--processes N] [--force]

Give the store as the config's data path (`MAELMO_TRAIN_PATH=STORE`); the reader's vocabulary must be the
one the store was prepared with, or the run stops at start.
"""

import argparse

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

from maelmo_cli.checks import Refusal
from maelmo_cli.commands import prepare
from maelmo_cli.parser import add_subparser
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

    requires_plugins = prepare.REQUIRES_PLUGINS

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = add_subparser(parser, prepare)

        def run(args: argparse.Namespace) -> None:
            try:
                prepare.check(args)
                tokenizer = WordpieceTokenizer(args.vocab)
                reader = MlmCorpusReader(tokenizer, document_start_pattern=args.document_start_pattern)
                store = TokenStore.prepare(
                    reader, args.corpus, args.output_dir, force=args.force, processes=args.processes
                )
            except (FileNotFoundError, ConfigurationError, Refusal) as error:
                subparser.error(str(error))
            print(
                f"Wrote a token store of {store.num_documents} documents and {store.num_tokens} word-pieces "
                f"to {args.output_dir}"
            )

        subparser.set_defaults(func=run)
        return subparser
