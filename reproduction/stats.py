"""
Reading a campaign's runs by seed, for the report scripts: a run's seed from its name (<arm>-seed<N>), the mean
and spread of a column of seeds, and the difference of two arms paired by seed.
"""

import statistics


def seed_of(run: str) -> str:
    return run.rsplit("-seed", 1)[-1]


def mean_sd(values: list) -> str:
    if not values:
        return "–"
    if len(values) == 1:
        return f"{values[0]:.1f} (1 run)"
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f} ({len(values)} runs)"


def paired(first: dict, second: dict):
    """("mean ± standard error", pairs) of first[seed] - second[seed] over the seeds both have; None under 2."""
    pairs = [value - second[seed] for seed, value in first.items() if seed in second]
    if len(pairs) < 2:
        return None
    return f"{statistics.mean(pairs):.1f} ± {statistics.stdev(pairs) / len(pairs) ** 0.5:.1f}", len(pairs)
