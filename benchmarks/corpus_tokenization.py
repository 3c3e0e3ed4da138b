"""
What `maelmo-prepare` costs against the word-piece tokenizer alone, on one core, in one invocation:

* `encode_batch`: `tokenizers`' own batch encoding of the corpus's non-blank lines, the floor (no sentences,
  no store);
* `maelmo-prepare` as it runs by default (`TokenStore.prepare`, one process: reading, the `maelmo_sentencizer`
  split, word-pieces, the store written);
* the same with AllenNLP's spaCy splitter (`{"type": "spacy", "language": "blank:en", "rule_based": true}`),
  which gives the same sentences: the two stores are compared byte for byte;
* each splitter alone over the same lines.

The goal: `maelmo-prepare` at most 1.5 times `encode_batch`. The corpus is WikiText-2's training set with the
bert-base-cased vocabulary when ../shared/data holds them, else the package's sample corpus.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/corpus_tokenization.py \
        [--record benchmarks/results/records/corpus_tokenization.json]
"""

import filecmp
import os
import shutil
import tempfile

import common
import torch
from allennlp.data.tokenizers.sentence_splitter import SpacySentenceSplitter

from maelmo_plugin.common.wordpiece import WordpieceTokenizer
from maelmo_plugin.lm.dataset_readers.mlm_corpus import MlmCorpusReader
from maelmo_plugin.lm.dataset_readers.sentencizer import Sentencizer
from maelmo_plugin.lm.dataset_readers.token_store import TokenStore

TARGET = 1.5
WIKITEXT_DOCUMENT_START = "^ = [^=].* = $"
STORE_FILES = ("ids.bin", "offsets.npy")


def corpus() -> tuple[str, str, str]:
    """(corpus path, vocabulary path, document_start_pattern or None)."""
    if os.path.exists(common.WIKITEXT2_TRAIN) and os.path.exists(common.BERT_VOCAB):
        return common.WIKITEXT2_TRAIN, common.BERT_VOCAB, WIKITEXT_DOCUMENT_START
    return str(common.SAMPLE_DIR / "train.txt"), str(common.SAMPLE_DIR / "vocab.txt"), None


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--record", help="write the record here")
    parser.set_defaults(repeats=3, warmup=1)
    args = parser.parse_args()
    device = common.setup(args)
    if device.type != "cpu":
        raise SystemExit("corpus tokenization runs on the CPU: leave --device out")
    # The Rust tokenizer's own threads would use cores the pinning does not give it.
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    path, vocab, pattern = corpus()
    with open(path, encoding="utf-8") as stream:
        lines = [line.strip() for line in stream if line.strip()]
    megabytes = os.path.getsize(path) / 1e6
    tokenizer = WordpieceTokenizer(vocab)
    rust = tokenizer.hf_tokenizer.backend_tokenizer
    splitters = {
        "maelmo_sentencizer": Sentencizer(),
        "spaCy": SpacySentenceSplitter(language="blank:en", rule_based=True),
    }
    readers = {
        name: MlmCorpusReader(tokenizer, document_start_pattern=pattern, sentence_splitter=splitter)
        for name, splitter in splitters.items()
    }
    scratch = tempfile.mkdtemp(prefix="maelmo-tokenization-bench-")
    stores = {name: os.path.join(scratch, name) for name in readers}
    try:
        runs = {
            "encode_batch": lambda: rust.encode_batch(lines, add_special_tokens=False),
            **{
                f"maelmo-prepare, {name}": (
                    lambda reader=reader, store=stores[name]: TokenStore.prepare(
                        reader, path, store, force=True, quiet=True
                    )
                )
                for name, reader in readers.items()
            },
            **{
                f"split only, {name}": lambda splitter=splitter: splitter.batch_split_sentences(lines)
                for name, splitter in splitters.items()
            },
        }
        seconds = common.interleaved(runs, torch.device("cpu"), args.warmup, args.repeats)
        same = all(
            filecmp.cmp(
                os.path.join(stores["maelmo_sentencizer"], name), os.path.join(stores["spaCy"], name), False
            )
            for name in STORE_FILES
        )
        tokens = TokenStore(stores["maelmo_sentencizer"]).num_tokens
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    floor = seconds["encode_batch"]
    rows = []
    for name, value in seconds.items():
        is_target = name == "maelmo-prepare, maelmo_sentencizer"
        rows.append(
            [
                name,
                value,
                f"{megabytes / value:.2f}",
                f"{value / floor:.2f}x",
                f"≤{TARGET}x" if is_target else "–",
                common.verdict(value / floor, TARGET, higher_is_better=False) if is_target else "",
            ]
        )
    header = ["run", "seconds", "MB/s", "vs encode_batch", "target", ""]
    print(
        f"# {path}: {megabytes:.1f} MB, {len(lines):,} non-blank lines, {tokens:,} word-pieces in the store"
    )
    common.print_table(header, rows)
    print(f"\n# the two stores are byte-identical ({', '.join(STORE_FILES)}): {same}")
    if args.record:
        common.write_record(
            args.record,
            "maelmo-prepare against the word-piece tokenizer alone, CPU",
            f"{common.machine_description(device)}; one process, {args.threads} torch thread(s), "
            f"TOKENIZERS_PARALLELISM=false",
            header,
            rows,
            data={
                "seconds": seconds,
                "megabytes": megabytes,
                "lines": len(lines),
                "word_pieces": tokens,
                "stores_identical": same,
                "corpus": os.path.basename(path),
            },
            notes=(
                f"{os.path.basename(path)} ({megabytes:.1f} MB, {len(lines):,} non-blank lines), median of "
                f"{args.repeats} after {args.warmup} warm-up, the runs interleaved. `encode_batch` encodes the "
                f"stripped lines in one call; `maelmo-prepare` reads the file, splits sentences, tokenizes them "
                f"and writes the store. The stores of the two splitters are "
                f"{'byte-identical' if same else 'DIFFERENT'}."
            ),
        )


if __name__ == "__main__":
    main()
