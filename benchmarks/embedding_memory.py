"""
Where `allennlp maelmo-embed`'s memory goes, batch by batch: the process's RSS and glibc's heap (`mallinfo2`:
its size, the bytes in use, the bytes free in it) after every batch of `embed_file`, with the input products'
rows padded to `ROW_BUCKET` (as shipped) and not (`--row-bucket 1`: a new oneDNN kernel, kept in its cache,
for almost every batch), each run in a fresh process, the two alternated. Linux with glibc only.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 0 .venv/bin/python benchmarks/embedding_memory.py \\
        --archive /tmp/qs/model.tar.gz --lines 5000 --repeats 2

Other candidates run the same way, one setting per invocation: an environment variable before the command
(`ONEDNN_PRIMITIVE_CACHE_CAPACITY=0`, `MALLOC_ARENA_MAX=1`,
`GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1048576`), `--trim-every N` (glibc's `malloc_trim(0)` after
every N batches), `--input FILE` (e.g. one sentence repeated: every batch the same shape), `--trace`
(tracemalloc: Python's own allocations at the end against the first batch). `--log DIR` keeps the per-batch
rows (JSON lines). The input is `bulk_embedding.py`'s (WikiText-2's training sentences); `--layer -1
--pool sentence`, fp32, batch 64, as there.
"""

import argparse
import ctypes
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from bulk_embedding import REPOSITORY, write_input

MALLINFO_FIELDS = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in MALLINFO_FIELDS]


def memory_row(libc: ctypes.CDLL) -> dict:
    """RSS, and glibc's main heap: its size, the bytes in use in it, the bytes free in it (MB)."""
    info = libc.mallinfo2()
    with open("/proc/self/statm", encoding="ascii") as statm:
        rss = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return {
        "rss_mb": rss / 2**20,
        "heap_mb": info.arena / 2**20,
        "in_use_mb": info.uordblks / 2**20,
        "free_mb": info.fordblks / 2**20,
    }


def child(args: argparse.Namespace) -> None:
    sys.path.insert(0, REPOSITORY)
    from allennlp.predictors import Predictor

    import maelmo_plugin  # noqa: F401
    from maelmo_plugin.embedding import embed_file, workers
    from maelmo_plugin.lm.loading import load_language_model_archive
    from maelmo_plugin.lm.modules.recurrence import inference

    if args.row_bucket[0]:  # 0: as shipped
        inference.ROW_BUCKET = args.row_bucket[0]
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    if args.trace:
        import tracemalloc

        tracemalloc.start(10)
    predictor = Predictor.from_archive(
        load_language_model_archive(args.archive),
        "maelmo_representations",
        extra_args={"layer": -1, "pool": "sentence", "precision": "fp32"},
    )
    rows: list[dict] = [{"batch": 0, **memory_row(libc)}]
    snapshots = []
    embed_batch = workers.embed_batch

    def measured(predictor, path, lines):  # InProcess looks `embed_batch` up at each batch
        count = embed_batch(predictor, path, lines)
        if args.trim_every and len(rows) % args.trim_every == 0:
            libc.malloc_trim(0)
        rows.append({"batch": len(rows), "seconds": time.perf_counter() - start, **memory_row(libc)})
        if args.trace and len(rows) == 2:
            snapshots.append(tracemalloc.take_snapshot())
        return count

    workers.embed_batch = measured
    start = time.perf_counter()
    count = embed_file(predictor, args.input, args.output, batch_size=64, force=True)
    seconds = time.perf_counter() - start
    result = {
        "lines": count,
        "seconds": seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if args.trace:
        growth = tracemalloc.take_snapshot().compare_to(snapshots[0], "lineno")
        result["python_mb"] = tracemalloc.get_traced_memory()[0] / 2**20
        result["python_growth_mb"] = sum(stat.size_diff for stat in growth) / 2**20
    print(json.dumps({**result, "rows": rows}))


def run_child(args: argparse.Namespace, row_bucket: int, output: str) -> dict:
    command = [sys.executable, os.path.abspath(__file__), "--child", "--archive", args.archive]
    command += ["--input", args.input, "--output", output, "--row-bucket", str(row_bucket)]
    command += ["--trim-every", str(args.trim_every)] + (["--trace"] if args.trace else [])
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)  # stderr: the progress
    os.remove(output)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archive", required=True)
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--input", help="embed this file instead of WikiText-2's first --lines sentences")
    parser.add_argument(
        "--row-bucket",
        type=int,
        nargs="+",
        default=[0, 1],
        help="ROW_BUCKET values, alternated (0: as shipped; 1: no padding)",
    )
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--trim-every", type=int, default=0, help="malloc_trim(0) after every N batches")
    parser.add_argument("--trace", action="store_true", help="tracemalloc: Python's own allocations")
    parser.add_argument("--log", help="a directory for each run's per-batch rows")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    work = tempfile.mkdtemp(prefix="embedding_memory_")
    if args.input is None:
        args.input = os.path.join(work, "input.txt")
        write_input(args.input, args.lines)
    print(
        "| run | ROW_BUCKET | batches | RSS after batch 1 (MB) | RSS at the end (MB) | heap in use, batch 1 -> "
        "end (MB) | free in the heap at the end (MB) | peak RSS (MB) | embedding (s) | sentences/s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    times: dict[int, list[float]] = {bucket: [] for bucket in args.row_bucket}
    for repeat in range(args.repeats):
        for bucket in args.row_bucket:
            result = run_child(args, bucket, os.path.join(work, "output.hdf5"))
            if args.log:
                os.makedirs(args.log, exist_ok=True)
                with open(os.path.join(args.log, f"{bucket}-{repeat}.jsonl"), "w", encoding="utf-8") as log:
                    log.writelines(json.dumps(row) + "\n" for row in result["rows"])
            first, last = result["rows"][1], result["rows"][-1]
            times[bucket].append(result["seconds"])
            python = (
                f" (Python: {result['python_mb']:.1f} MB, {result['python_growth_mb']:+.1f} since batch 1)"
                if args.trace
                else ""
            )
            print(
                f"| {repeat + 1} | {bucket or 'as shipped'} | {len(result['rows']) - 1} | {first['rss_mb']:,.0f} | "
                f"{last['rss_mb']:,.0f} | {first['in_use_mb']:,.0f} -> {last['in_use_mb']:,.0f} | "
                f"{last['free_mb']:,.0f} | {result['peak_rss_mb']:,.0f} | {result['seconds']:.1f} | "
                f"{result['lines'] / result['seconds']:.1f}{python} |",
                flush=True,
            )
    for bucket, seconds in times.items():
        print(f"ROW_BUCKET {bucket or 'as shipped'}: median {statistics.median(seconds):.1f} s")


if __name__ == "__main__":
    main()
