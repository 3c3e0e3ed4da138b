"""
Bulk embedding past one process, the three ways the plugin offers, at 1 and 2 workers on this machine:

* processes: `maelmo maelmo-embed ARCHIVE IN OUT --processes N` (one command, N forked workers);
* shards: N `maelmo maelmo-embed ... --shard K/N` commands at once, then `maelmo maelmo-merge`;
* Ray: `maelmo maelmo-ray-embed IN OUT --model ARCHIVE --actors N` (run as `python -m
  maelmo_plugin.embedding.ray_data`, the same command), on the local Ray
  cluster it starts (each actor one CPU and one thread).

Each figure is whole commands' wall-clock time, as a user waits for them: start-up, the model's loading (once
per process, shard or actor), Ray's cluster, the merge. Sentences/s is lines / wall; the start-up is the wall
of a `--small` input. The input is WikiText-2's training text cut into sentences (as `bulk_embedding.py` cuts
it), one vector per line (`--layer -1 --pool sentence`; Ray's rows carry the same vector). The default 8,192
lines are 4 of maelmo-embed's windows (64 x 32 lines), so that 2 shards get equal halves. The ways run one
after the other at each size, so that a drift in the machine's load slows each alike; the shards' merged
file is checked bit for bit against the processes' file. `--record FILE` keeps the seconds as JSON, and
`--from-record FILE` prints the table again from it.

    .venv/bin/python benchmarks/scale_out_embedding.py --archive /tmp/qs/model.tar.gz \
        --record benchmarks/results/records/scale_out_embedding.json
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from bulk_embedding import same_vectors
from common import WIKITEXT2_TRAIN, cpu_model, print_table, wikitext_sentences, write_record

BIN = os.path.dirname(sys.executable)
WAYS = ("processes", "shards", "Ray")
TITLE = "Bulk embedding at 1 and 2 workers: --processes, --shard + maelmo-merge, Ray Data actors"
NOTES = (
    "Whole commands' wall-clock time: start-up, model loading per process or actor, Ray's cluster and the merge "
    "included; the Quickstart archive, one vector per line, one thread per worker."
)
OPTIONS = ["--layer", "-1", "--pool", "sentence", "--batch-size", "64"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archive", help="a model.tar.gz (the Quickstart's)")
    parser.add_argument("--lines", type=int, default=8192)
    parser.add_argument("--small", type=int, default=500, help="the input that measures the start-up")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--work-dir", default=None, help="where inputs and outputs go (default: a temporary one)"
    )
    parser.add_argument("--record", help="write the measurements to this JSON file")
    parser.add_argument("--from-record", help="print the table of a record, measuring nothing")
    args = parser.parse_args()
    if args.from_record:
        with open(args.from_record, encoding="utf-8") as stream:
            print_table(*table(json.load(stream)["data"]))
        return
    if not args.archive:
        parser.error("--archive is required (a model.tar.gz: the Quickstart's)")
    work = args.work_dir or tempfile.mkdtemp(prefix="scale_out_")
    os.makedirs(work, exist_ok=True)
    sentences = wikitext_sentences(WIKITEXT2_TRAIN, period=True)  # bulk_embedding.py's
    inputs = {count: write_inputs(work, count, sentences) for count in (args.small, args.lines)}
    seconds = {}
    for workers in args.workers:
        for count in (args.small, args.lines):
            for way in WAYS:  # alternated, one after the other, at each size
                output = os.path.join(work, f"{way}-{workers}-{count}")
                seconds[f"{way}/{workers}/{count}"] = run(way, args.archive, inputs[count], output, workers)
        if workers > 1:
            assert same_vectors(
                os.path.join(work, f"processes-{workers}-{args.lines}.hdf5"),
                os.path.join(work, f"shards-{workers}-{args.lines}.hdf5"),
            ), "the merged shards differ from the processes' file"
    data = {"lines": args.lines, "small": args.small, "workers": args.workers, "seconds": seconds}
    header, rows = table(data)
    if args.record:
        machine = f"{cpu_model()}, {os.cpu_count()} CPUs"
        write_record(args.record, TITLE, machine, header, rows, data, NOTES)
    print_table(header, rows)
    if not args.work_dir:
        shutil.rmtree(work)


def write_inputs(work: str, count: int, sentences: list[str]) -> dict:
    """The same lines as plain text (maelmo-embed) and as JSON lines of id and text (Ray)."""
    lines = [sentences[number % len(sentences)] for number in range(count)]
    paths = {"text": os.path.join(work, f"in-{count}.txt"), "rows": os.path.join(work, f"in-{count}.jsonl")}
    with (
        open(paths["text"], "w", encoding="utf-8") as text,
        open(paths["rows"], "w", encoding="utf-8") as rows,
    ):
        for number, line in enumerate(lines):
            text.write(line + "\n")
            rows.write(json.dumps({"id": number, "text": line}) + "\n")
    return paths


def run(way: str, archive: str, paths: dict, output: str, workers: int) -> float:
    """Seconds of the way's commands, from the first start to the last exit."""
    maelmo = [os.path.join(BIN, "maelmo")]
    start = time.perf_counter()
    if way == "processes":
        wait(
            [
                maelmo
                + [
                    "maelmo-embed",
                    archive,
                    paths["text"],
                    output + ".hdf5",
                    "--processes",
                    str(workers),
                    *OPTIONS,
                ]
            ]
        )
    elif way == "shards":
        parts = [f"{output}-part{k}.hdf5" for k in range(workers)]
        wait(
            [
                maelmo + ["maelmo-embed", archive, paths["text"], part, "--shard", f"{k}/{workers}", *OPTIONS]
                for k, part in enumerate(parts)
            ]
        )
        wait([maelmo + ["maelmo-merge", output + ".hdf5", *parts]])
    else:
        ray_module = [sys.executable, "-m", "maelmo_plugin.embedding.ray_data"]
        command = ray_module + [paths["rows"], output, "--model", archive, "--actors", str(workers)]
        wait([command])
    return time.perf_counter() - start


def wait(commands: list[list[str]]) -> None:
    """Runs the commands at once, one thread per worker; fails with the first one's error."""
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    processes = [
        subprocess.Popen(
            command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        for command in commands
    ]
    for command, process in zip(commands, processes):
        _, errors = process.communicate()
        if process.returncode != 0:
            sys.exit(f"{' '.join(command[:3])} ... failed:\n{errors[-2000:]}")


def table(data: dict) -> tuple[list[str], list[list[object]]]:
    lines, small, seconds = data["lines"], data["small"], data["seconds"]
    header = [
        "way",
        "workers",
        f"wall, {lines} lines (s)",
        "sentences/s",
        "vs processes",
        f"start-up, {small} lines (s)",
    ]
    rows: list[list[object]] = []
    for workers in data["workers"]:
        for way in WAYS:
            wall = seconds[f"{way}/{workers}/{lines}"]
            ratio = seconds[f"processes/{workers}/{lines}"] / wall
            rows.append(
                [
                    way,
                    workers,
                    f"{wall:.1f}",
                    f"{lines / wall:.0f}",
                    f"{ratio:.2f}x",
                    f"{seconds[f'{way}/{workers}/{small}']:.1f}",
                ]
            )
    return header, rows


if __name__ == "__main__":
    main()
