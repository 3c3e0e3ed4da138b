"""
Figure 8: preparing a corpus once, and starting a run on the result.

1. Word-pieces/s of `allennlp maelmo-prepare` (`TokenStore.prepare`: reading, sentence splitting, word-piece
   tokenisation, writing the store) with 1 and with 2 processes, on the same corpus, in one invocation.
2. Seconds from process start to the first batch of the `maelmo_btbptt` loader (stateful, shuffled, as
   `pretrain_common.libsonnet` configures it) on a prepared store, for a corpus and for a copy `--copies`
   times its size. Each is a fresh `python` process, timed from `Popen` to the line it prints after its
   first batch, so it includes the interpreter and the imports (the same for every size); the child also
   reports its own seconds from after the imports. The goal: the time does not grow with the corpus.

The corpus is WikiText-2's training set with the bert-base-cased vocabulary (one document per article),
when ../shared/data holds them, else the sample corpus shipped with the package; the large one is that text
written `--copies` times into one file (so `--copies` times the documents and word-pieces).

    .venv/bin/python benchmarks/corpus_preparation.py             # uses both cores: do not pin
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import common

from maelmo_plugin.common.wordpiece import WordpieceTokenizer
from maelmo_plugin.lm.dataset_readers.mlm_corpus import MlmCorpusReader
from maelmo_plugin.lm.dataset_readers.token_store import TokenStore

WIKITEXT_DOCUMENT_START = "^ = [^=].* = $"

# The child: open the store through the loader, take one batch, say when (seconds since its imports ended).
CHILD = """
import sys, time
from allennlp.common import Params
from allennlp.data import DataLoader, DatasetReader
import maelmo_plugin
imported = time.perf_counter()
vocab, pattern, store, batch_size, sequence_length = sys.argv[1:]
reader = {"type": "maelmo_mlm_corpus", "tokenizer": {"type": "maelmo_wordpiece", "vocab": vocab}}
if pattern:
    reader["document_start_pattern"] = pattern
loader = DataLoader.from_params(
    Params({"type": "maelmo_btbptt", "batch_size": int(batch_size), "sequence_length": int(sequence_length),
            "shuffle": True, "seed": 13370, "stateful": True, "quiet": True}),
    reader=DatasetReader.from_params(Params(reader)), data_path=store,
)
batch = next(iter(loader))
print("first batch", tuple(batch["tokens"]["tokens"]["tokens"].shape), time.perf_counter() - imported, flush=True)
"""


def corpus():
    """(corpus path, vocabulary path, document_start_pattern)."""
    if os.path.exists(common.WIKITEXT2_TRAIN) and os.path.exists(common.BERT_VOCAB):
        return common.WIKITEXT2_TRAIN, common.BERT_VOCAB, WIKITEXT_DOCUMENT_START
    return str(common.SAMPLE_DIR / "train.txt"), str(common.SAMPLE_DIR / "vocab.txt"), None


def prepare(reader: MlmCorpusReader, path: str, store: str, processes: int):
    """(the store, seconds) of preparing `path` with `processes` processes."""
    start = time.perf_counter()
    result = TokenStore.prepare(reader, path, store, force=True, quiet=True, processes=processes)
    return result, time.perf_counter() - start


def first_batch(vocab: str, pattern, store: str, batch_size: int, sequence_length: int):
    """(seconds from Popen to the first batch, the child's seconds after its imports) of one fresh process."""
    start = time.perf_counter()
    child = subprocess.run(
        [sys.executable, "-c", CHILD, vocab, pattern or "", store, str(batch_size), str(sequence_length)],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, TOKENIZERS_PARALLELISM="false"),
    )
    total = time.perf_counter() - start
    line = [line for line in child.stdout.splitlines() if line.startswith("first batch")][-1]
    return total, float(line.split()[-1])


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument(
        "--copies", type=int, default=10, help="the large corpus is the corpus this many times"
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--sequence-length", type=int, default=128)
    args = parser.parse_args()
    common.setup(args)
    path, vocab, pattern = corpus()
    reader = MlmCorpusReader(WordpieceTokenizer(vocab), document_start_pattern=pattern)
    scratch = tempfile.mkdtemp(prefix="maelmo-prepare-bench-")
    try:
        large = os.path.join(scratch, f"corpus-x{args.copies}.txt")
        with open(path, "rb") as original, open(large, "wb") as out:
            text = original.read()
            for _ in range(args.copies):
                out.write(text)

        print(f"# corpus {path}, vocabulary {vocab}")
        rows, small_store = [], os.path.join(scratch, "store")
        for repeat in range(args.repeats):
            # 1 and 2 processes alternate, so that load on the machine slows both alike.
            for processes in (1, 2) if repeat % 2 == 0 else (2, 1):
                store, seconds = prepare(reader, path, small_store, processes)
                rows.append((processes, store.num_tokens, seconds))
        medians = {p: statistics.median(s for q, _, s in rows if q == p) for p in (1, 2)}
        tokens = rows[0][1]
        common.print_table(
            ["processes", "word-pieces", "seconds (median)", "word-pieces/s", "vs 1 process"],
            [[p, tokens, medians[p], tokens / medians[p], f"{medians[1] / medians[p]:.2f}x"] for p in (1, 2)],
        )

        large_store, large_seconds = prepare(reader, large, os.path.join(scratch, "store-large"), 2)
        print(
            f"\n# the x{args.copies} corpus: {large_store.num_tokens:,} word-pieces, {large_store.num_documents:,} "
            f"documents, prepared in {large_seconds:.1f} s with 2 processes "
            f"({large_store.num_tokens / large_seconds:,.0f} word-pieces/s)"
        )

        stores = {"corpus": small_store, f"corpus x{args.copies}": large_store.directory}
        times = {name: [] for name in stores}
        for repeat in range(args.repeats):
            for name in stores if repeat % 2 == 0 else reversed(list(stores)):
                times[name].append(
                    first_batch(vocab, pattern, stores[name], args.batch_size, args.sequence_length)
                )
        small_seconds = statistics.median(total for total, _ in times["corpus"])
        table = []
        for name, directory in stores.items():
            store = TokenStore(directory)
            total = statistics.median(total for total, _ in times[name])
            after_imports = statistics.median(child for _, child in times[name])
            table.append(
                [
                    name,
                    store.num_documents,
                    store.num_tokens,
                    total,
                    after_imports,
                    f"{total / small_seconds:.2f}x",
                ]
            )
        print(
            f"\n# process start to first batch, batch {args.batch_size} x {args.sequence_length}, median of "
            f"{args.repeats} fresh processes"
        )
        common.print_table(
            [
                "store",
                "documents",
                "word-pieces",
                "seconds to first batch",
                "of which after imports",
                "vs corpus",
            ],
            table,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
