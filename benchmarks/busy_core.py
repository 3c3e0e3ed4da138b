"""
The "other core busy" rows of the CPU records (`encoder_speed.py --record`, `encoder_flops.py --record`): a
one-thread pre-training loop on another core while the script measures on its own. The loop is
`common.masked_lm_step` at the CPU config's size (`training_config/lm/pretrain_small.jsonnet`: d=128, 512
cells, 2 layers, batch 32 x 64, bert-base-cased's vocabulary size), updates one after another with one
thread. It stands in for what core 0 ran when the records were first measured, the first WikiText-2 training
runs (docs/performance_history.md, "The machines and their load"): the same model and update, without the
corpus reader and the loader.

    with busy_core.load(0) as load:   # returns once the loop has made its first update
        ...measure...
    load  # {"core": 0, "updates": 123, "seconds_per_update": 0.45}, once the loop has stopped

`quiet_then_busy(core, measure)` runs a record's two parts, `measure(QUIET)` with `core` left idle, then
`measure(BUSY)` beside the load, and says how busy `core` was during each (from /proc/stat: `core_times`);
`describe` puts that in words for the record's notes.

Run alone, this module is the load: `python benchmarks/busy_core.py --core 0` updates until SIGTERM or SIGINT,
then prints its count of updates as JSON.
"""

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator

READY = "ready"
# The records' first cells of their two parts (the guides name rows by them).
QUIET, BUSY = "quiet machine", "other core busy"
# Above this, the load core was too busy for its part to be called "quiet machine": a warning says so.
QUIET_LIMIT = 0.10


def check_core(core: int) -> None:
    """SystemExit unless `core` exists and this process may not run on it (the load would slow it itself)."""
    allowed = sorted(os.sched_getaffinity(0))
    if core in allowed:
        raise SystemExit(
            f"the load's core {core} is one this process may run on ({allowed}): pin the measurement to "
            f"another core (taskset -c 1) or name another load core (--busy-core)"
        )
    if not 0 <= core < (os.cpu_count() or 1):
        raise SystemExit(f"there is no core {core} to load (cores 0 to {(os.cpu_count() or 1) - 1})")


def quiet_then_busy(core: int, measure: Callable[[str], None]) -> dict:
    """`measure(QUIET)` with `core` left idle, then `measure(BUSY)` beside `load(core)`: {"load": its report,
    "load_core_busy": {part: the fraction of the time `core` was busy}}."""
    check_core(core)
    fractions = {}
    before = core_times(core)
    measure(QUIET)
    fractions[QUIET] = utilisation(before, core_times(core))
    if fractions[QUIET] > QUIET_LIMIT:
        print(
            f"# WARNING: core {core} was {fractions[QUIET]:.0%} busy during the {QUIET!r} rows: not quiet",
            file=sys.stderr,
            flush=True,
        )
    with load(core) as report:
        before = core_times(core)
        measure(BUSY)
        fractions[BUSY] = utilisation(before, core_times(core))
    return {"load": report, "load_core_busy": fractions}


def describe(parts: dict) -> str:
    """`quiet_then_busy`'s result in words, for a record's notes."""
    load, fractions = parts["load"], parts["load_core_busy"]
    core, updates = load["core"], load.get("updates", 0)
    return (
        f'"{QUIET}": core {core} left idle ({fractions[QUIET]:.0%} busy meanwhile); "{BUSY}": core {core} running a '
        f"one-thread pre-training loop (benchmarks/busy_core.py: the CPU config's d=128, 512 cells, batch 32 x 64; "
        f"{updates} update{'' if updates == 1 else 's'} of {load.get('seconds_per_update', float('nan')):.2f} s; the "
        f"core {fractions[BUSY]:.0%} busy meanwhile)."
    )


@contextlib.contextmanager
def load(core: int) -> Iterator[dict]:
    """A one-thread pre-training loop pinned to `core` for the `with` block's duration (see module docstring)."""
    check_core(core)
    environment = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    report: dict = {"core": core}
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as errors:
        process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--core", str(core)],
            stdout=subprocess.PIPE,
            stderr=errors,
            env=environment,
            text=True,
        )
        try:
            _wait_until_ready(process, errors)
            yield report
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                output, _ = process.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                output, _ = process.communicate()
            counts = [line for line in output.splitlines() if line.startswith("{")]
            if counts:
                report.update(json.loads(counts[-1]))


def _wait_until_ready(process: subprocess.Popen, errors) -> None:
    """Blocks until the load prints READY (its first update done); SystemExit with its stderr if it stops."""
    assert process.stdout is not None
    for line in process.stdout:
        if line.strip() == READY:
            return
    process.wait()
    errors.seek(0)
    raise SystemExit(f"the load on another core stopped before its first update:\n{errors.read()[-4000:]}")


def core_times(core: int) -> tuple[int, int]:
    """(busy, total) clock ticks of `core` since boot, from /proc/stat ((0, 0) where it cannot be read)."""
    try:
        with open("/proc/stat", encoding="utf-8") as stat:
            for line in stat:
                fields = line.split()
                if fields and fields[0] == f"cpu{core}":
                    ticks = [int(value) for value in fields[1:8]]
                    idle = ticks[3] + ticks[4]  # idle and iowait
                    return sum(ticks) - idle, sum(ticks)
    except OSError:
        pass
    return 0, 0


def utilisation(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The fraction of the time between two `core_times` that the core was busy (nan where unknown)."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else float("nan")


def _stop_with_parent() -> None:
    """On Linux, SIGTERM to this process when the one that started it dies, so that no load outlives it."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--core", type=int, required=True, help="the core the loop runs on")
    parser.add_argument("--size", default="128x512", help="d x cells (the CPU config's)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sequence-length", type=int, default=64)
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.core})
    _stop_with_parent()
    stop = []
    for name in (signal.SIGTERM, signal.SIGINT):
        signal.signal(name, lambda *_: stop.append(True))

    import common
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    dim, cells = common.parse_size(args.size)
    model = common.masked_elmo_lm(common.PAPER_VOCAB_SIZE, dim, cells).train()
    token_ids = common.token_batch(
        common.PAPER_VOCAB_SIZE, args.batch_size, args.sequence_length, torch.device("cpu")
    )
    step = common.masked_lm_step(model, token_ids)
    step()
    print(READY, flush=True)
    start, updates = time.perf_counter(), 0
    while not stop:
        step()
        updates += 1
    seconds = time.perf_counter() - start
    print(json.dumps({"updates": updates, "seconds_per_update": seconds / max(updates, 1)}), flush=True)


if __name__ == "__main__":
    main()
