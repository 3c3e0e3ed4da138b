"""
Training speed as sections 2.2 and 3.3 read it, measured as a speed must be to compare: the `speed` campaign
(campaigns.speed_runs) runs each arm's own config for 2 short epochs, arms interleaved seed by seed on one core,
so the two runs a seed pairs ran minutes apart on one machine (their machine.json says which; claims.py pairs
only runs on the same kind of CPU). The long runs' CPU times (arena_encoders, cell) come from sessions on machines
of more than one kind, some unrecorded: their tables show them, the verdicts read these.

A run's speed is read between its first validation point and its last, past the first updates' one-off costs
(kernel selection, allocation), in process CPU time without the validations (the validation curve's clock). That
span holds the first epoch's checkpoint, about 0.1 CPU-second for these sizes (0.3% of the span), the same for
the arena's encoders, which are matched in size.
"""

import statistics
from typing import Optional

from reproduction.campaigns import PRE_LN_BERT
from reproduction.stats import mean_sd

# The arena's budget: 2 epochs of WikiText-2's training text in updates of 32 x 64 word-pieces.
ARENA_UPDATES = 2494
# What would time the arena's pre-LN BERT* (campaigns.PRE_LN_BERT), on the kind of CPU the committed Masked ELMo
# timings ran on (an AMD EPYC with AVX2; on another, its seeds pair with none of them, and the row says so).
PRE_LN_TIMING = f".venv/bin/python -m reproduction speed --runs '{PRE_LN_BERT}-*' --core 1"


def steady(run: dict) -> Optional[tuple]:
    """(updates, word-pieces, CPU seconds) of the run between its first validation point and its last; None for a
    run with fewer than two points."""
    curve = run["validation_curve"]
    if len(curve) < 2 or curve[-1]["updates"] <= curve[0]["updates"]:
        return None
    first, last = curve[0], curve[-1]
    return (
        last["updates"] - first["updates"],
        last["wordpieces"] - first["wordpieces"],
        last["cpu_seconds"] - first["cpu_seconds"],
    )


def steady_speed(run: dict) -> Optional[float]:
    """Training word-pieces per CPU-second, past the first validation point."""
    measured = steady(run)
    return measured[1] / max(measured[2], 1e-9) if measured else None


def update_seconds(run: dict) -> Optional[float]:
    """CPU seconds of one training update, past the first validation point."""
    measured = steady(run)
    return measured[2] / measured[0] if measured else None


def arena_budget_minutes(run: dict) -> Optional[float]:
    """The training CPU-minutes of the arena's whole budget (ARENA_UPDATES) at the speed the run measured: its
    updates are the arena's size (32 x 64 word-pieces) and config, so only their number differs."""
    seconds = update_seconds(run)
    return seconds * ARENA_UPDATES / 60 if seconds is not None else None


def cpu(machine: Optional[dict]) -> str:
    """The CPU a run recorded, with its speed-relevant flags (two EPYCs may differ in vector width)."""
    if not machine:
        return "not recorded"
    return f"{machine['cpu']} ({', '.join(machine.get('flags', [])) or 'no listed flags'})"


def speed_table(arms: dict) -> str:
    """Each arm's speed over its seeds, and the CPU it ran on."""
    lines = [
        "### Training speed: each arm's own config, 2 short epochs, arms interleaved seed by seed on one core (speed)",
        "",
        "| arm | word-pieces per CPU-second | CPU-seconds per update | CPU-minutes of the arena's "
        f"{ARENA_UPDATES:,} updates | CPU |",
        "|---|---|---|---|---|",
    ]
    for arm, runs in sorted(arms.items()):
        measured = [run for run in runs if steady(run)]
        if not measured:
            continue
        # None only for a run without a steady span, which `measured` leaves out
        speeds = [speed for run in measured if (speed := steady_speed(run)) is not None]
        seconds = [second for run in measured if (second := update_seconds(run)) is not None]
        budget = (
            mean_sd([arena_budget_minutes(run) for run in measured]) if not arm.startswith("cell_") else "–"
        )
        cpus = sorted({cpu(run.get("machine")) for run in measured})
        lines.append(
            f"| {arm} | {statistics.mean(speeds):,.0f} ({', '.join(f'{s:,.0f}' for s in speeds)}) | "
            f"{statistics.mean(seconds):.3f} | {budget} | {', '.join(cpus)} |"
        )
    return "\n".join(lines) + "\n"
