"""
Memory and start-up against the corpus's size (issue 72): the peak RSS and CPU seconds of `maelmo-prepare` and
of the `maelmo_btbptt` loader's first batch at several sizes of one corpus, and their growth per document, a
least-squares slope over the sizes.

The corpus is WikiText-2's training split cut into paragraph-sized documents (every non-blank line, headings
included, a document of its own, a blank line after each), written k times for each k of `--sizes`, each copy
in its own shuffled order (from `--seed`): about 2,200 documents per MB, the kind of corpus (posts, sentences,
dialogue turns) where a cost per document shows first. Each size runs in fresh processes, one at a time:
* prepare: what `maelmo-prepare CORPUS --vocab bert-base-cased --output-dir STORE` runs (`TokenStore.prepare`
  with the command's reader), one process (the command's default);
* first batch: the loader as `pretrain_common.libsonnet` configures it (stateful, shuffled, seed 13370, at
  most 65,536 blocks, batch 64 x 128) on that store, until its first batch, `--repeats` times (the median is kept).
Each process imports, builds its reader (the tokenizer, spaCy's pipeline) and loader, returns the heap freed
so far (`malloc_trim`) and resets its peak RSS (`/proc/self/clear_refs`): its `ru_maxrss` (from `os.wait4`)
is then the peak of the work on top of that start-up, whose own peak (the same at every size, well above the
start-up's RSS) would hide a growth of a hundred MB. The start-up column is the RSS at the reset. Even so, up
to a few tens of MB of growth fit in the free memory the imports leave inside Python's allocator, so the RSS
of the smallest sizes shows little of a cost per document: `--traced` adds the peak that tracemalloc sees
(Python's and numpy's allocations), exact at any size, from one more run of each child. The CPU
seconds are the process's own after its imports (`time.process_time`), building included. Every child runs
in the scratch directory, so it imports the `maelmo_plugin` of the interpreter it runs with: `--python`, or
`PYTHONPATH`, measures another checkout's code.

    taskset -c 1 .venv/bin/python benchmarks/corpus_memory.py --sizes 1 4 16 64 \\
        --record benchmarks/results/records/corpus_memory.json
    PYTHONPATH=../old taskset -c 1 .venv/bin/python benchmarks/corpus_memory.py --sizes 1 4   # old's code

At 64 copies the corpus is about 690 MB of text and 1.5M documents; with its store about 1 GB of scratch space
(`--work-dir`, a temporary directory by default), removed as it goes. The issue's target: peak RSS and the
time to the first batch within 5% across a 64x range of sizes (the last row's ratios).
"""

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

import common
import numpy as np
import torch

TITLE = "Peak memory and CPU time of maelmo-prepare and of the first batch against the corpus's size"

# A measured process: imports, builds the reader (and the loader), resets its peak RSS, does `mode`'s work;
# prints its RSS at the reset, its CPU seconds after the imports and, traced, the peak of what tracemalloc saw.
CHILD = """
import ctypes, sys, time, tracemalloc
from allennlp.common import Params
from allennlp.data import DataLoader
from maelmo_plugin.common.wordpiece import WordpieceTokenizer
from maelmo_plugin.lm.dataset_readers.mlm_corpus import MlmCorpusReader
from maelmo_plugin.lm.dataset_readers.token_store import TokenStore
mode, vocab, corpus, store, traced = sys.argv[1:]
started = time.process_time()
reader = MlmCorpusReader(WordpieceTokenizer(vocab))
reader.sentence_splitter  # the splitter (spaCy's tokenizer), else built at the first split
if mode == "first-batch":
    loader = DataLoader.from_params(
        Params({"type": "maelmo_btbptt", "batch_size": 64, "sequence_length": 128, "shuffle": True,
                "seed": 13370, "max_shuffle_blocks": 65536, "stateful": True, "quiet": True}),
        reader=reader, data_path=store,
    )
ctypes.CDLL("libc.so.6").malloc_trim(0)  # the heap freed so far goes back, so that no growth hides in it
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # the peak RSS so far (the imports', the tokenizer's) starts again from the current RSS
with open("/proc/self/status") as status:
    start_up = [int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:")][0]
if traced == "traced":
    tracemalloc.start()
if mode == "prepare":
    TokenStore.prepare(reader, corpus, store, quiet=True, processes=1)
else:
    next(iter(loader))
print("measured", start_up, time.process_time() - started, tracemalloc.get_traced_memory()[1])
"""


def paragraphs() -> list[str]:
    with open(common.WIKITEXT2_TRAIN, encoding="utf-8") as lines:
        return [line.strip() for line in lines if line.strip()]


def write_corpus(path: str, texts: list[str], copies: int, seed: int) -> None:
    """`copies` copies of `texts`, each shuffled, one document per text (a blank line after each)."""
    with open(path, "w", encoding="utf-8") as out:
        for copy in range(copies):
            order = list(range(len(texts)))
            random.Random(seed + copy).shuffle(order)
            out.write("".join(f"{texts[index]}\n\n" for index in order))


def run(command: list[str], cwd: str) -> tuple[float, float, float, float]:
    """
    (RSS at the start-up, peak RSS after it, CPU seconds of the work, the traced peak or 0) of a `CHILD`
    command, in bytes.
    """
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=err)
        # wait4 gives this child's own resource usage, where RUSAGE_CHILDREN would give the largest of all.
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode(errors="replace")
    if process.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({process.returncode}):\n{stderr[-3000:]}")
    measured = [line for line in stdout.splitlines() if line.startswith("measured")][-1]
    _, start_up, seconds, traced = measured.split()
    return float(start_up), usage.ru_maxrss * 1024.0, float(seconds), float(traced)  # ru_maxrss is in KiB


def slope(documents: list[int], values: list[float]) -> float:
    """The least-squares growth of `values` per document."""
    return float(np.polyfit(np.asarray(documents, dtype=float), np.asarray(values, dtype=float), 1)[0])


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[1, 4, 16, 64], help="copies of WikiText-2's training split"
    )
    parser.add_argument(
        "--python", default=sys.executable, help="the interpreter of the code to measure (default: this one)"
    )
    parser.add_argument(
        "--traced",
        action="store_true",
        help="also run each child once under tracemalloc and report the peak of Python's and numpy's "
        "allocations: exact at any size, where a growth of tens of MB hides in the free memory the imports "
        "leave in Python's allocator until the corpus is large (the CPU seconds come from the untraced runs)",
    )
    parser.add_argument("--work-dir", default=None, help="scratch space (default: a temporary directory)")
    parser.add_argument("--record", default=None, help="write the record (common.write_record) to this path")
    args = parser.parse_args()
    if len(args.sizes) < 2:
        parser.error("give at least two --sizes: the growth per document is fitted over them")
    if not (os.path.exists(common.WIKITEXT2_TRAIN) and os.path.exists(common.BERT_VOCAB)):
        sys.exit(f"needs {common.WIKITEXT2_TRAIN} and {common.BERT_VOCAB} (MAELMO_SHARED_DATA)")
    common.setup(args)
    python = os.path.abspath(args.python)
    code = {"python": python, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    print(f"# children run {code}")
    texts = paragraphs()
    scratch = tempfile.mkdtemp(prefix="corpus_memory_", dir=args.work_dir)
    measured = []
    try:
        for copies in sorted(args.sizes):
            corpus, store = os.path.join(scratch, f"x{copies}.txt"), os.path.join(scratch, f"store{copies}")
            write_corpus(corpus, texts, copies, args.seed)
            start_up, prepare_rss, prepare_cpu, _ = run(
                [python, "-c", CHILD, "prepare", common.BERT_VOCAB, corpus, store, "untraced"], scratch
            )
            with open(os.path.join(store, "manifest.json"), encoding="utf-8") as manifest:
                counts = json.load(manifest)
            batch = [python, "-c", CHILD, "first-batch", common.BERT_VOCAB, corpus, store]
            batches = [run(batch + ["untraced"], scratch) for _ in range(args.repeats)]
            measured.append(
                {
                    "copies": copies,
                    "megabytes": os.path.getsize(corpus) / 1e6,
                    "documents": counts["num_documents"],
                    "wordpieces": counts["num_tokens"],
                    "start_up_rss_mb": start_up / 1e6,
                    "prepare_peak_rss_mb": prepare_rss / 1e6,
                    "prepare_cpu_s": prepare_cpu,
                    "first_batch_peak_rss_mb": statistics.median(rss for _, rss, _, _ in batches) / 1e6,
                    "first_batch_cpu_s": statistics.median(cpu for _, _, cpu, _ in batches),
                }
            )
            if args.traced:
                traced_store = [python, "-c", CHILD, "prepare", common.BERT_VOCAB, corpus, store + "-traced"]
                measured[-1]["prepare_traced_peak_mb"] = run(traced_store + ["traced"], scratch)[3] / 1e6
                measured[-1]["first_batch_traced_peak_mb"] = run(batch + ["traced"], scratch)[3] / 1e6
                shutil.rmtree(store + "-traced")
            print(f"# {copies}x: {measured[-1]}", flush=True)
            os.remove(corpus)
            shutil.rmtree(store)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    documents = [row["documents"] for row in measured]
    figures = ["prepare_peak_rss_mb", "prepare_cpu_s", "first_batch_peak_rss_mb", "first_batch_cpu_s"]
    units = ["B", "µs", "B", "µs"]
    if args.traced:
        figures += ["prepare_traced_peak_mb", "first_batch_traced_peak_mb"]
        units += ["B", "B"]
    # Bytes (from MB) or microseconds (from seconds) per document.
    fits = {name: slope(documents, [row[name] for row in measured]) * 1e6 for name in figures}
    ratios = {name: measured[-1][name] / measured[0][name] for name in figures}
    header = [
        "copies",
        "MB",
        "documents",
        "word-pieces",
        "start-up RSS (MB)",
        "prepare: peak RSS (MB)",
        "prepare: CPU-s",
        "first batch: peak RSS (MB)",
        "first batch: CPU-s",
    ] + (["prepare: traced peak (MB)", "first batch: traced peak (MB)"] if args.traced else [])
    rows: list[list[object]] = [
        [
            row[name]
            for name in ("copies", "megabytes", "documents", "wordpieces", "start_up_rss_mb", *figures)
        ]
        for row in measured
    ]
    rows.append(
        ["growth per document", "", "", "", "", *(f"{fits[n]:,.2f} {u}" for n, u in zip(figures, units))]
    )
    largest, smallest = measured[-1]["copies"], measured[0]["copies"]
    rows.append([f"{largest}x / {smallest}x", "", "", "", "", *(f"{ratios[name]:.3f}x" for name in figures)])
    common.print_table(header, rows)
    if args.record:
        common.write_record(
            args.record,
            TITLE,
            common.machine_description(torch.device("cpu")),
            header,
            rows,
            data={"sizes": measured, "growth_per_document": fits, "ratios": ratios, **code},
            notes=(
                "Each size in fresh processes: maelmo-prepare's code (one process) and the loader's first batch "
                f"(median of {args.repeats}). Peak RSS (os.wait4) from the RSS once the reader and loader are "
                "built (the peak reset there); CPU seconds after the imports; the growth per document is the "
                "least-squares slope over the sizes."
            ),
        )


if __name__ == "__main__":
    main()
