"""
Bulk embedding with `allennlp maelmo-embed`: sentences per second and peak memory (RSS) at 10,000 and
100,000 lines, to show that memory does not grow with the input, with one process or with worker processes
(`--processes 1 2` runs each size with each).

The input is WikiText-2's training text cut into sentences (at " . "), blank lines and headings left out,
repeated up to the number of lines. Each size runs in a fresh process that loads the archive and then runs
`embed_file` (the command's code path: checks, fingerprint, batches written to OUTPUT.partial/, the final
copy into OUTPUT); sentences/s counts that part, not the model's loading. Peak RSS is the process's
`ru_maxrss`, loading included; with worker processes, also the largest worker's (its `VmHWM`) and the
peak of the proportional set size (PSS) of the process and its workers together, both sampled every
10 s: forked workers share the parent's pages (the model, the imports) until they write them, which
RSS counts once per process and PSS divides among them. Each `--processes` value after the first is
checked against the first's output, dataset by dataset, bit for bit. The CPU time (of the process and its
workers, during the embedding, the sampling's own left out) is the figure to compare on a core that other
jobs share: there, N processes get N shares of the core from the scheduler, and seem faster than one.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 0 .venv/bin/python benchmarks/bulk_embedding.py \\
        --archive /tmp/qs/model.tar.gz --lines 10000 100000 --layer -1 --pool sentence

    # one core, then two: one process (torch's threads) against two worker processes, alternated
    .venv/bin/python benchmarks/bulk_embedding.py --archive /tmp/qs/model.tar.gz --lines 10000 \\
        --cores 0 0,1 --processes 1 2 --repeats 3

    # one process on one core against two workers on two cores only, at both sizes
    .venv/bin/python benchmarks/bulk_embedding.py --archive /tmp/qs/model.tar.gz --lines 10000 100000 \\
        --cores 0 0,1 --processes 1 2 --pair

The archive is the Quickstart's (`training_config/lm/pretrain_small.jsonnet`; speed does not depend on
training, so one epoch does). The defaults write one vector per line (`--layer -1 --pool sentence`), so that
100,000 lines fit on any disk; `--pool none --layer all` writes every word-piece's L + 1 vectors (about
60 KB a line at the Quickstart's size, and twice that while the batches are copied into the output).
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Optional

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_input(path: str, count: int, distinct: int = 0) -> None:
    """`count` lines of WikiText-2's training sentences, the first `distinct` (0: all) repeated in turn."""
    from common import WIKITEXT2_TRAIN, wikitext_sentences  # imports torch: only where it is needed

    sentences = wikitext_sentences(WIKITEXT2_TRAIN, period=True)[: distinct or None]
    with open(path, "w", encoding="utf-8") as output:
        for number in range(count):
            output.write(sentences[number % len(sentences)] + "\n")


def proc_mb(path: str, field: str) -> float:
    """A field in kB of a /proc file (`Pss:` of smaps_rollup, `VmHWM:` of status), in MB; 0 if it has gone."""
    try:
        with open(path, encoding="ascii") as lines:
            for line in lines:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0.0


def pss_mb(pid: int) -> float:
    """A process's proportional set size: its private pages, and its share of the pages it shares."""
    return proc_mb(f"/proc/{pid}/smaps_rollup", "Pss:")


def children(pid: int) -> list[int]:
    """The processes that `pid`'s main thread started (the workers fork from it)."""
    with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as listing:
        return [int(child) for child in listing.read().split()]


class PeakMemory:
    """
    Sampled every `period` s: the peak PSS of this process and its children (the workers) together, and
    the largest peak RSS of a child (its `VmHWM`, the kernel's own peak, up to the last sample). Reading a
    process's smaps costs tens of ms of CPU: often enough for a peak that moves slowly, seldom enough that
    the sampling stays out of the figures (its CPU time is left out of the run's).
    """

    def __init__(self, period: float = 10.0) -> None:
        self.peak_mb = 0.0
        self.child_peak_rss_mb = 0.0
        self.cpu_s = 0.0  # the sampling's own CPU time (reading /proc), left out of the run's
        self._period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        stopped = False
        while not stopped:  # once more when stopped: a run shorter than the period gets a sample too
            stopped = self._stop.wait(self._period)
            pid = os.getpid()
            workers = children(pid)
            self.peak_mb = max(self.peak_mb, pss_mb(pid) + sum(pss_mb(worker) for worker in workers))
            for worker in workers:
                self.child_peak_rss_mb = max(
                    self.child_peak_rss_mb, proc_mb(f"/proc/{worker}/status", "VmHWM:")
                )
            self.cpu_s = time.thread_time()

    def __enter__(self) -> "PeakMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()


def cpu_seconds() -> float:
    """The CPU time of this process and of its children that ended (the workers, once joined)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def same_vectors(path_a: str, path_b: str) -> bool:
    import h5py
    import numpy as np

    with h5py.File(path_a, "r") as a, h5py.File(path_b, "r") as b:
        if set(a.keys()) != set(b.keys()) or a["sentence_to_index"][0] != b["sentence_to_index"][0]:
            return False
        return all(np.array_equal(a[name][()], b[name][()]) for name in a if name != "sentence_to_index")


def child(args: argparse.Namespace) -> None:
    sys.path.insert(0, REPOSITORY)
    import torch
    from allennlp.predictors import Predictor
    from common import cpu_model

    import maelmo_plugin  # noqa: F401
    from maelmo_plugin.embedding import embed_file
    from maelmo_plugin.lm.loading import load_language_model_archive

    if args.processes > 1:
        torch.set_num_threads(1)  # as the command does: the workers compute, one thread each
    start = time.perf_counter()
    archive = load_language_model_archive(args.archive)
    layer = None if args.layer == "all" else (args.layer if args.layer == "mix" else int(args.layer))
    pool = None if args.pool == "none" else args.pool
    predictor = Predictor.from_archive(
        archive,
        "maelmo_representations",
        extra_args={"layer": layer, "pool": pool, "precision": args.precision},
    )
    loaded = time.perf_counter()
    cpu_before = cpu_seconds()
    with PeakMemory() as memory:
        count = embed_file(
            predictor,
            args.input,
            args.output,
            batch_size=args.batch_size,
            force=True,
            processes=args.processes,
        )
    done = time.perf_counter()
    cpu = cpu_seconds() - cpu_before - memory.cpu_s
    print(
        json.dumps(
            {
                "lines": count,
                "processes": args.processes,
                "load_s": loaded - start,
                "embed_s": done - loaded,
                "cpu_s": cpu,
                "sampling_cpu_s": memory.cpu_s,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "worker_peak_rss_mb": memory.child_peak_rss_mb,
                "peak_pss_mb": memory.peak_mb,
                "output_mb": os.path.getsize(args.output) / 1e6,
                "threads": 1 if args.processes > 1 else torch.get_num_threads(),
                "cores": sorted(os.sched_getaffinity(0)),
                "cpu": cpu_model(),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archive", required=True)
    parser.add_argument("--lines", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--layer", default="-1", help="all, mix or a layer (default -1)")
    parser.add_argument("--pool", default="sentence", help="none, first, mean or sentence (default sentence)")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--processes",
        type=int,
        nargs="+",
        default=[1],
        help="maelmo-embed's --processes, each run in turn on each size (default 1); the first is the "
        "reference of the speed-up and of the bit-for-bit check",
    )
    parser.add_argument(
        "--cores",
        nargs="+",
        default=None,
        help="the cores to run on, one set per configuration, e.g. `--cores 0 0,1`: each --processes value "
        "runs on each set (default: this process's cores)",
    )
    parser.add_argument(
        "--pair",
        action="store_true",
        help="pair --cores with --processes in order (`--cores 0 0,1 --processes 1 2`: one process on core 0, "
        "two on cores 0 and 1) instead of running every combination",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="runs of each --processes value, alternated; the median time is reported (default 1)",
    )
    parser.add_argument(
        "--work-dir", default=None, help="where inputs and outputs go (default: a temporary one)"
    )
    parser.add_argument(
        "--distinct",
        type=int,
        default=0,
        help="repeat the first N sentences only (default: all 76,683), so that inputs of different sizes have "
        "the same sentence lengths, which decide the peak memory of a batch",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.processes = args.processes[0]
        child(args)
        return
    # None: the cores this process may use.
    core_sets = (
        [frozenset(int(core) for core in text.split(",")) for text in args.cores] if args.cores else [None]
    )
    work = args.work_dir or tempfile.mkdtemp(prefix="bulk_embedding_")
    os.makedirs(work, exist_ok=True)
    rows = []
    for count in args.lines:
        input_file = os.path.join(work, f"{count}.txt")
        write_input(input_file, count, args.distinct)
        if args.pair:
            if len(core_sets) != len(args.processes):
                parser.error("--pair needs as many --cores sets as --processes values")
            pairs = zip(core_sets, args.processes)
        else:
            pairs = ((cores, processes) for cores in core_sets for processes in args.processes)
        configurations = list(dict.fromkeys(pairs))
        runs: dict[tuple, list[dict]] = {configuration: [] for configuration in configurations}
        reference = None  # the first run's output, which every other run must equal
        # Alternated (A B A B ...), so that a background job slows every side alike.
        for repeat in range(args.repeats):
            for number, (cores, processes) in enumerate(configurations):
                output_file = os.path.join(work, f"{count}-{number}-{repeat}.hdf5")
                run = run_child(args, input_file, output_file, processes, cores)
                if reference is None:
                    reference, run["bit_equal"] = output_file, True
                else:
                    run["bit_equal"] = same_vectors(reference, output_file)
                    os.remove(output_file)
                runs[(cores, processes)].append(run)
                print(json.dumps(run), flush=True)
        os.remove(reference)
        rows += [median_row(runs[configuration]) for configuration in configurations]
        base = rows[-len(configurations)]["embed_s"]
        for row in rows[-len(configurations) :]:
            row["speedup"] = base / row["embed_s"]
    print(
        f"\n`--layer {args.layer} --pool {args.pool} --precision {args.precision} --batch-size {args.batch_size}`; "
        f"{rows[0]['cpu']}; median of {args.repeats} alternated run(s)\n"
    )
    print(
        "| lines | cores | processes | threads each | model loading (s) | embedding (s) | sentences/s | speed-up | "
        "CPU time (s) | sentences per CPU-s | peak RSS (MB) | largest worker's peak RSS (MB) | "
        "peak PSS, all processes (MB) | output (MB) | bit-equal to the first |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        worker = f"{row['worker_peak_rss_mb']:.0f}" if row["processes"] > 1 else "–"
        cores = ",".join(map(str, row["cores"]))
        print(
            f"| {row['lines']:,} | {cores} | {row['processes']} | {row['threads']} | {row['load_s']:.1f} | "
            f"{row['embed_s']:.0f} | {row['lines'] / row['embed_s']:.1f} | {row['speedup']:.2f}x | "
            f"{row['cpu_s']:.0f} | {row['lines'] / row['cpu_s']:.1f} | "
            f"{row['peak_rss_mb']:.0f} | {worker} | {row['peak_pss_mb']:.0f} | {row['output_mb']:.1f} | "
            f"{'yes' if row['bit_equal'] else 'NO'} |"
        )


def run_child(
    args: argparse.Namespace, input_file: str, output_file: str, processes: int, cores: Optional[frozenset]
) -> dict:
    """One run in a fresh process, on `cores` (as `taskset -c` would): `child`'s figures."""
    command = [sys.executable, os.path.abspath(__file__), "--child", "--input", input_file]
    command += ["--output", output_file, "--archive", args.archive, "--layer", args.layer]
    command += ["--pool", args.pool, "--precision", args.precision, "--batch-size", str(args.batch_size)]
    command += ["--processes", str(processes)]
    pin = None if cores is None else (lambda: os.sched_setaffinity(0, cores))
    result = subprocess.run(command, capture_output=True, text=True, check=True, preexec_fn=pin)
    return json.loads(result.stdout.strip().splitlines()[-1])


def median_row(runs: list[dict]) -> dict:
    """The median of the times, the largest of the peaks; bit-equal if every run was."""
    row = dict(runs[0])
    for key in ("load_s", "embed_s", "cpu_s"):
        row[key] = statistics.median(run[key] for run in runs)
    for key in ("peak_rss_mb", "worker_peak_rss_mb", "peak_pss_mb"):
        row[key] = max(run[key] for run in runs)
    row["bit_equal"] = all(run["bit_equal"] for run in runs)
    return row


if __name__ == "__main__":
    main()
