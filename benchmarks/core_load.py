"""
The other cores of a CPU record: how busy they were while it was measured (`CoreUse`, from /proc/stat), and a
one-thread training run that keeps one of them busy for the rows measured with "the other core busy"
(`TrainingLoad`). `quiet_then_busy(core, measure)` runs a record's two parts, `measure(QUIET)` with `core` left
idle, then `measure(BUSY)` beside the load, and `describe` puts how busy `core` was in each in the record's words.

The training run is the CPU config's update (`pretrain_small.jsonnet`: d=128, 512 cells, batch 32 x 64, the
bert-base-cased vocabulary size, k=1, Adam) in a loop, in a process of its own with one thread, pinned to its
core: what `allennlp train` of that config does once its data is read, without the reading and the
validation passes that would make the load come and go. The loop stops when its parent ends.

Run alone it is the load itself (the benchmarks start it; nothing to run by hand):

    .venv/bin/python benchmarks/core_load.py --core 0
"""

import argparse
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Optional

LOAD_SIZE = "d=128, 512 cells, batch 32 x 64"  # the CPU config's, as `load` builds it
# The records' first cells of their two parts (the guides name rows by them).
QUIET, BUSY = "quiet machine", "other core busy"


def own_cores() -> set:
    return set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set()


def other_core() -> Optional[int]:
    """The first core this process may not run on (None where it may run on all: it is not pinned)."""
    others = sorted(set(range(os.cpu_count() or 1)) - own_cores())
    return others[0] if others else None


def _core_times() -> dict:
    """{core: (busy jiffies, all jiffies)} from /proc/stat ({} where there is none)."""
    try:
        with open("/proc/stat", encoding="utf-8") as stat:
            lines = stat.read().splitlines()
    except OSError:
        return {}
    times = {}
    for line in lines:
        name, *fields = line.split()
        if name.startswith("cpu") and name != "cpu":
            values = [int(field) for field in fields[:8]]
            idle = values[3] + values[4]  # idle + iowait
            times[int(name[3:])] = (sum(values) - idle, sum(values))
    return times


class CoreUse:
    """The busy fraction of each core between `start()` and `stop()` (all processes, this one included)."""

    def __init__(self) -> None:
        self.fractions: dict = {}
        self._before: dict = {}

    def start(self) -> "CoreUse":
        self._before = _core_times()
        return self

    def stop(self) -> dict:
        after = _core_times()
        self.fractions = {
            core: round((busy - self._before[core][0]) / max(1, total - self._before[core][1]), 3)
            for core, (busy, total) in after.items()
            if core in self._before
        }
        return self.fractions

    def others(self) -> dict:
        """The fractions of the cores this process is not pinned to."""
        return {core: use for core, use in self.fractions.items() if core not in own_cores()}

    def describe(self) -> str:
        """'core 0 3% busy' for the other cores ('' where /proc/stat is unreadable or none is other)."""
        return ", ".join(f"core {core} {use:.0%} busy" for core, use in sorted(self.others().items()))

    def warn_if_busy(self, phase: str, limit: float = 0.2) -> None:
        busy = {core: use for core, use in self.others().items() if use > limit}
        if busy:
            cores = ", ".join(f"core {core} {use:.0%}" for core, use in sorted(busy.items()))
            print(f"# warning: during the {phase} run other cores were busy ({cores}): not a quiet machine")


def check_core(core: int) -> None:
    """SystemExit unless `core` exists and this process may not run on it (the load would slow it itself)."""
    if core in own_cores():
        raise SystemExit(
            f"the load's core {core} is one this process may run on ({sorted(own_cores())}): pin the measurement "
            f"to another core (taskset -c 1) or name another load core (--busy-core)"
        )
    if not 0 <= core < (os.cpu_count() or 1):
        raise SystemExit(f"there is no core {core} to load (cores 0 to {(os.cpu_count() or 1) - 1})")


def quiet_then_busy(core: int, measure: Callable[[str], None]) -> dict:
    """
    `measure(QUIET)` with `core` left idle, then `measure(BUSY)` beside `TrainingLoad(core)`: {"core": core,
    "load_core_busy": {part: the fraction of the time `core` was busy}}.
    """
    check_core(core)
    quiet = CoreUse().start()
    measure(QUIET)
    quiet.stop()
    quiet.warn_if_busy(QUIET)
    with TrainingLoad(core):
        busy = CoreUse().start()
        measure(BUSY)
        busy.stop()
    fractions = {part: use.fractions.get(core, float("nan")) for part, use in ((QUIET, quiet), (BUSY, busy))}
    return {"core": core, "load_core_busy": fractions}


def describe(parts: dict) -> str:
    """`quiet_then_busy`'s result in words, for a record's notes."""
    core, fractions = parts["core"], parts["load_core_busy"]
    return (
        f'"{QUIET}": core {core} left idle ({fractions[QUIET]:.0%} busy meanwhile); "{BUSY}": core {core} running '
        f"a one-thread pre-training loop (benchmarks/core_load.py: the CPU config's {LOAD_SIZE}; the core "
        f"{fractions[BUSY]:.0%} busy meanwhile)."
    )


class TrainingLoad:
    """A context: the one-thread training loop (module docstring) on `core`, started and past its first update
    on entry, ended on exit."""

    def __init__(self, core: int) -> None:
        self.core = core
        self.process: Optional[subprocess.Popen] = None

    def __enter__(self) -> "TrainingLoad":
        if self.core in own_cores():
            print(f"# warning: the training load runs on core {self.core}, which this process shares")
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        command = [sys.executable, os.path.abspath(__file__), "--core", str(self.core)]
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
        ready = self.process.stdout.readline()
        if not ready.startswith("ready"):
            self.__exit__(None, None, None)
            raise RuntimeError(f"the training load on core {self.core} did not start: {ready!r}")
        return self

    def __exit__(self, *exception) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


def load(core: int) -> None:
    """The training loop, pinned to `core` with one thread; prints "ready" after its first update."""
    os.sched_setaffinity(0, {core})
    import common
    import torch

    torch.set_num_threads(1)
    parent = os.getppid()
    model = common.masked_elmo_lm(common.PAPER_VOCAB_SIZE, 128, 512).train()
    step = common.masked_lm_step(
        model, common.token_batch(common.PAPER_VOCAB_SIZE, 32, 64, torch.device("cpu"))
    )
    step()
    print("ready", flush=True)
    while os.getppid() == parent:  # a parent killed outright leaves no load behind
        step()


if __name__ == "__main__":
    arguments = argparse.ArgumentParser(description=__doc__)
    arguments.add_argument("--core", type=int, required=True)
    load(arguments.parse_args().core)
