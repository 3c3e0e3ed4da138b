"""
How fast the `maelmo` command answers what needs no model: each `maelmo-*` subcommand's `--help` and one
refusal of each (a missing archive, an existing output, a bad `--shard`, ...), against `python -c "import
torch"` in the same run, the floor of any command that loads a model. For reference, the same `--help`
through `python -m maelmo_plugin`, which imports AllenNLP and the plugin first. Then the two model-free
commands whole: `maelmo-vocab` on the sample corpus (1,344 lines) and `maelmo-merge` on two shards of 64
lines, and, with `--baseline PYTHON` (the interpreter of another checkout's venv, e.g. main's), the same two
through that checkout's `maelmo`: a before and after in one run. Each command runs in its own process pinned
to one core, `--repeats` times, taking turns; the figures are the process's CPU time (user + system, the
median), which the core's other load does not inflate as it does the wall time, and its peak RSS.

    .venv/bin/python benchmarks/startup.py [--repeats 5] [--core 0] [--baseline ../main/.venv/bin/python]
        [--record benchmarks/results/records/startup_light.json]

The targets: each light answer, `maelmo --help`, `--version` and a mistyped command too, at most a quarter of
`import torch` (issues 63 and 70); `maelmo-vocab` and `maelmo-merge` without the plugin's start-up (issue 72).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

import common
import h5py
import numpy as np

from maelmo_declarations.shards import Shard
from maelmo_files.embedding.hdf5_layout import LIBVER, write_sentence_to_index
from maelmo_files.embedding.shards import SHARD_ATTRIBUTE, content_sha256

TITLE = "The `maelmo` command's answers that need no model, against `import torch`"
MAELMO = str(Path(sys.executable).with_name("maelmo"))
SAMPLE_CORPUS = str(Path(common.REPOSITORY) / "training_config" / "lm" / "sample" / "train.txt")


# Runs its arguments as a command and prints that process's CPU seconds, peak RSS (KB) and exit status. A
# process's peak RSS starts at its parent's (Linux keeps it across fork and exec), so the command is forked
# from this small interpreter, not from the benchmark, which holds torch.
MEASURE = """
import os, sys
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_utime + usage.ru_stime, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def measure(command: list[str], cwd: str, core: int) -> tuple[float, float, int]:
    """CPU seconds (user + system), peak RSS in MB and exit status of `command` pinned to `core`."""
    pinned = ["taskset", "-c", str(core), sys.executable, "-I", "-S", "-c", MEASURE, *command]
    seconds, peak, status = subprocess.run(
        pinned, cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.split()
    return float(seconds), int(peak) / 1024, int(status)


def write_shards(directory: str, num_lines: int = 128, window: int = 64, dim: int = 16) -> list[str]:
    """
    The two shard files of one `maelmo-embed --shard K/2` run, in its layout and with its record, holding
    random vectors: the merge reads no model, so a shard needs none.
    """
    fingerprint = {"model": {"weights_sha256": "0" * 64}, "options": {"batch_size": 2, "window": window}}
    generator = np.random.default_rng(0)
    paths = []
    for index in range(2):
        shard = Shard(index, 2)
        lines = shard.lines(num_lines, window)
        path = os.path.join(directory, f"shard{index}.hdf5")
        with h5py.File(path, "w", libver=LIBVER) as file:
            for line in lines:
                tokens = ["[CLS]", *f"sentence number {line}".split(), "[SEP]"]
                vectors = generator.standard_normal((len(tokens), dim), dtype=np.float32)
                file.create_dataset(str(line), data=vectors).attrs.create(
                    "tokens", tokens, dtype=h5py.string_dtype()
                )
            write_sentence_to_index(file, {f"sentence number {line}": str(line) for line in lines})
            sha256 = content_sha256(file, lines)
            file.attrs[SHARD_ATTRIBUTE] = shard.record(num_lines, window, fingerprint, sha256)
        paths.append(path)
    return paths


def model_free(directory: str, maelmo: str, shards: list[str], label: str) -> dict[str, list[str]]:
    """`maelmo-vocab` and `maelmo-merge` through the `maelmo` script `maelmo`, each into its own output."""
    name = label.replace(" ", "_")
    vocab = os.path.join(directory, f"vocab_{name}")
    merged = os.path.join(directory, f"merged_{name}.hdf5")
    return {
        f"`maelmo maelmo-vocab`, the sample corpus ({label})": [
            maelmo,
            "maelmo-vocab",
            SAMPLE_CORPUS,
            "--output-dir",
            vocab,
            "--force",
        ],
        f"`maelmo maelmo-merge`, two shards of 64 lines ({label})": [
            maelmo,
            "maelmo-merge",
            merged,
            *shards,
            "--force",
        ],
    }


def checkout_commit(python: str, directory: str) -> str:
    """The commit of the checkout whose `maelmo_cli` the interpreter `python` (run in `directory`) imports."""
    where = subprocess.run(
        [python, "-c", "import maelmo_cli, os; print(os.path.dirname(os.path.dirname(maelmo_cli.__file__)))"],
        cwd=directory,  # not this checkout, which `python -c` would import first
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=where, capture_output=True, text=True
    ).stdout.strip()


def commands(directory: str, baseline: Optional[str]) -> dict[str, list[str]]:
    existing = os.path.join(directory, "existing.hdf5")
    archive = os.path.join(directory, "model.tar.gz")
    lines = os.path.join(directory, "lines.txt")
    for path, text in ((existing, ""), (archive, ""), (lines, "a sentence\n")):
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(text)
    missing = os.path.join(directory, "missing.tar.gz")
    refusals = {
        "maelmo-embed": (["maelmo-embed", missing, lines, "out.hdf5"], "no such archive"),
        "maelmo-export": (["maelmo-export", missing, "export"], "no such archive"),
        "maelmo-merge": (["maelmo-merge", existing, "a.hdf5"], "existing output"),
        "maelmo-prepare": (
            ["maelmo-prepare", lines, "--vocab", "v", "--output-dir", directory],
            "existing store",
        ),
        "maelmo-vocab": (["maelmo-vocab", lines, "--output-dir", existing], "output is a file"),
        "maelmo-config": (["maelmo-config", "lm/no_such_config"], "no such config"),
        "maelmo-torchrun": (["maelmo-torchrun", "--nnodes", "1:2", "train", "c", "-s", "d"], "elastic sizes"),
        "maelmo-ray-embed": (["maelmo-ray-embed", lines, "out", "--model", missing], "no such model"),
    }
    table = {'`python -c "import torch"`': [sys.executable, "-c", "import torch"]}
    table["`maelmo --help`"] = [MAELMO, "--help"]
    table["`maelmo --version`"] = [MAELMO, "--version"]
    table["`maelmo trian`, a mistyped command"] = [MAELMO, "trian"]
    for name, (argv, what) in refusals.items():
        table[f"`maelmo {name} --help`"] = [MAELMO, name, "--help"]
        table[f"`maelmo {name}`, {what}"] = [MAELMO, *argv]
    table["`maelmo-embed --shard 2/2`, bad shard"] = [
        MAELMO,
        "maelmo-embed",
        archive,
        lines,
        "o.hdf5",
        "--shard",
        "2/2",
    ]
    table["`python -m maelmo_plugin maelmo-embed --help` (AllenNLP first)"] = [
        sys.executable,
        "-m",
        "maelmo_plugin",
        "maelmo-embed",
        "--help",
    ]
    shards = write_shards(directory)
    table.update(model_free(directory, MAELMO, shards, "this checkout"))
    if baseline is not None:
        baseline_maelmo = str(Path(baseline).with_name("maelmo"))
        table.update(
            model_free(directory, baseline_maelmo, shards, f"baseline {checkout_commit(baseline, directory)}")
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--core", type=int, default=0, help="the CPU core every command is pinned to")
    parser.add_argument(
        "--baseline",
        default=None,
        help="another checkout's venv Python (e.g. main's), whose `maelmo` runs the model-free commands too",
    )
    parser.add_argument("--record", default=None, help="write the record (benchmarks/results/records/...)")
    args = parser.parse_args()
    machine = f"{common.cpu_model()}, one core (taskset -c {args.core})"
    print(f"CPU: {machine}; {args.repeats} repeats")
    with tempfile.TemporaryDirectory() as directory:
        table = commands(directory, args.baseline)
        measured: dict[str, list[float]] = {name: [] for name in table}
        peaks: dict[str, list[float]] = {name: [] for name in table}
        statuses: dict[str, int] = {}
        for _ in range(args.repeats):
            for name, command in table.items():
                seconds, peak, statuses[name] = measure(command, directory, args.core)
                measured[name].append(seconds)
                peaks[name].append(peak)
    torch_seconds = statistics.median(next(iter(measured.values())))
    header = ["command", "exit status", "CPU s (median)", "x `import torch`", "peak RSS MB (median)"]
    rows = []
    for name, runs in measured.items():
        median = statistics.median(runs)
        peak = statistics.median(peaks[name])
        rows.append([name, statuses[name], f"{median:.3f}", f"{median / torch_seconds:.2f}", f"{peak:.0f}"])
    common.print_table(header, rows)
    if args.record:
        data = {"cpu_seconds": measured, "peak_rss_mb": peaks, "exit_status": statuses}
        notes = (
            "Each light answer parses its arguments and runs its checks with the standard library only; "
            "`python -m maelmo_plugin` imports AllenNLP and the plugin before it parses anything. "
            "`maelmo-vocab` and `maelmo-merge` run whole in `maelmo`, with tokenizers or h5py and no model "
            "library; a baseline before issue 72 imported the plugin first."
        )
        common.write_record(args.record, TITLE, machine, header, rows, data, notes)


if __name__ == "__main__":
    main()
