"""
How fast the `maelmo` command answers what needs no model: each `maelmo-*` subcommand's `--help` and one
refusal of each (a missing archive, an existing output, a bad `--shard`, ...), against `python -c "import
torch"` in the same run, the floor of any command that loads a model. For reference, the same `--help`
through `python -m maelmo_plugin`, which imports AllenNLP and the plugin first. Each command runs in its own
process pinned to one core, `--repeats` times, taking turns; the figure is the process's CPU time (user +
system, the median), which the core's other load does not inflate as it does the wall time.

    .venv/bin/python benchmarks/startup.py [--repeats 5] [--core 0] [--record benchmarks/results/records/startup_light.json]

The target (issues 63 and 70): each light answer, `maelmo --help`, `--version` and a mistyped command too, at
most a quarter of `import torch`.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import common

TITLE = "The `maelmo` command's answers that need no model, against `import torch`"
MAELMO = str(Path(sys.executable).with_name("maelmo"))


def cpu_seconds(command: list[str], cwd: str, core: int) -> tuple[float, int]:
    """CPU seconds (user + system) and exit status of `command` pinned to `core`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(["taskset", "-c", str(core), *command], cwd=cwd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), result.returncode


def commands(directory: str) -> dict[str, list[str]]:
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
    return table


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--core", type=int, default=0, help="the CPU core every command is pinned to")
    parser.add_argument("--record", default=None, help="write the record (benchmarks/results/records/...)")
    args = parser.parse_args()
    machine = f"{common.cpu_model()}, one core (taskset -c {args.core})"
    print(f"CPU: {machine}; {args.repeats} repeats")
    with tempfile.TemporaryDirectory() as directory:
        table = commands(directory)
        measured: dict[str, list[float]] = {name: [] for name in table}
        statuses: dict[str, int] = {}
        for _ in range(args.repeats):
            for name, command in table.items():
                seconds, statuses[name] = cpu_seconds(command, directory, args.core)
                measured[name].append(seconds)
    torch_seconds = statistics.median(next(iter(measured.values())))
    header = ["command", "exit status", "CPU s (median)", "x `import torch`"]
    rows = []
    for name, runs in measured.items():
        median = statistics.median(runs)
        rows.append([name, statuses[name], f"{median:.3f}", f"{median / torch_seconds:.2f}"])
    common.print_table(header, rows)
    if args.record:
        data = {"cpu_seconds": measured, "exit_status": statuses}
        notes = (
            "Each light answer parses its arguments and runs its checks with the standard library only; the "
            "last row imports AllenNLP and the plugin before it parses anything."
        )
        common.write_record(args.record, TITLE, machine, header, rows, data, notes)


if __name__ == "__main__":
    main()
