"""
The `maelmo-prepare` job: tokenizes a pre-training corpus once into a token store, which every run and
every worker then opens instead of tokenizing the text again.

    allennlp maelmo-prepare CORPUS [CORPUS ...] --vocab VOCAB --output-dir STORE [--document-start-pattern RE]
                            [--processes N] [--shard K/N] [--force]

Give the store as the config's data path (`MAELMO_TRAIN_PATH=STORE`); the reader's vocabulary must be the
one the store was prepared with, or the run stops at start. Declared in `maelmo_declarations/commands/prepare.py`.
"""

import argparse

from maelmo_plugin.common.wordpiece import WordpieceTokenizer
from maelmo_plugin.lm.dataset_readers.mlm_corpus import MlmCorpusReader
from maelmo_plugin.lm.dataset_readers.token_store import TokenStore


def run(args: argparse.Namespace) -> None:
    """
    Reads the corpus as the `maelmo_mlm_corpus` reader does (paragraphs, `[CLS]`/`[SEP]`, documents) and writes
    a `maelmo_plugin.lm.dataset_readers.token_store` directory.
    """
    tokenizer = WordpieceTokenizer(args.vocab)
    reader = MlmCorpusReader(tokenizer, document_start_pattern=args.document_start_pattern)
    shard = getattr(args, "shard", None)
    if shard is not None:
        TokenStore.prepare_part(
            reader, args.corpus, args.output_dir, shard, force=args.force, processes=args.processes
        )
        print(
            f"Wrote part {shard} of a token store to {args.output_dir}: join the {shard.count} parts with "
            f"`maelmo maelmo-merge STORE PART...`"
        )
        return
    store = TokenStore.prepare(
        reader, args.corpus, args.output_dir, force=args.force, processes=args.processes
    )
    print(
        f"Wrote a token store of {store.num_documents} documents and {store.num_tokens} word-pieces to "
        f"{args.output_dir}"
    )
