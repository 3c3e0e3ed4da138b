"""
Start-up of the plugin's commands, as a user runs them: `allennlp maelmo-embed --help`, and a one-sentence
`allennlp maelmo-embed` of a Quickstart-size archive (d 128, 512 cells, the sample's vocabulary; random
weights) with `--include-package maelmo_plugin` as the README writes it. Each command runs in its own
process pinned to one core, `--repeats` times; with several `--trees` (checkouts of the plugin, e.g. before
and after a change) the trees take turns, so that they share the machine's load alike. For each, the wall
time and the CPU time (user + system) of the process, and the lines it printed (those of
`allennlp.common.params` apart).

    .venv/bin/python benchmarks/startup.py [--trees DIR ...] [--repeats 3] [--core 0]

A command imports AllenNLP (every submodule, and allennlp-models) before it reads its arguments: most of
the time is AllenNLP's. `python -X importtime` on the same commands tells the plugin's own imports apart.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import common
from representations import make_archive

SENTENCE = "The cat sleeps on the house.\n"


def run(command: list[str], cwd: str, core: int) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system) and stdout + stderr of `command` pinned to `core`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(
        ["taskset", "-c", str(core), *command], cwd=cwd, capture_output=True, text=True, check=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, result.stdout + result.stderr


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trees", nargs="+", default=[common.REPOSITORY], help="plugin checkouts to compare")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--core", type=int, default=0, help="the CPU core every command is pinned to")
    args = parser.parse_args()
    print(f"CPU: {common.cpu_model()}; one core (taskset -c {args.core}); {args.repeats} repeats")
    with tempfile.TemporaryDirectory() as directory:
        archive = make_archive(directory, str(common.SAMPLE_DIR / "vocab.txt"), 128, 512)
        sentences = os.path.join(directory, "sentence.txt")
        with open(sentences, "w", encoding="utf-8") as text:
            text.write(SENTENCE)
        output = os.path.join(directory, "vectors.hdf5")
        allennlp = [sys.executable, "-m", "allennlp"]
        commands = {
            "maelmo-embed --help": [*allennlp, "maelmo-embed", "--help"],
            "maelmo-embed, one sentence": [
                *allennlp,
                "maelmo-embed",
                archive,
                sentences,
                output,
                "--include-package",
                "maelmo_plugin",
            ],
        }
        measured: dict[tuple[str, str], list[tuple[float, float, str]]] = {}
        for _ in range(args.repeats):
            for tree in args.trees:
                for name, command in commands.items():
                    if os.path.exists(output):
                        os.remove(output)
                    measured.setdefault((tree, name), []).append(run(command, tree, args.core))
    rows = []
    for (tree, name), runs in measured.items():
        lines = runs[-1][2].splitlines()
        parameters = sum("allennlp.common.params" in line for line in lines)
        rows.append(
            [
                tree,
                name,
                " ".join(f"{wall:.1f}" for wall, _, _ in runs),
                f"{statistics.median(cpu for _, cpu, _ in runs):.1f}",
                f"{len(lines) - parameters} + {parameters}",
            ]
        )
    common.print_table(
        ["tree", "command", "wall s (each run)", "CPU s (median)", "lines + params lines"], rows
    )


if __name__ == "__main__":
    main()
