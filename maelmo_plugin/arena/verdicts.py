"""
The rule that turns paired differences into a verdict in two words (docs/reproduction.md, "How a verdict is
decided"): the one rule of `maelmo-arena`'s table (`table.py`, which words it for two arms, neither of them the
paper's) and of the reproduction's report (reproduction/claims.py, the paper's claims).

The 95% interval of the mean paired difference (the paper's arm minus its baseline, one difference per seed) is
Student's t over the seeds: mean ± t(0.975, n - 1) * s / sqrt(n). With 3 seeds t = 4.30: the interval reaches
4.3 standard errors either side of the mean, not the 2 of a normal reading.

- **Direction**, from the interval and zero alone: *supports* when it excludes zero on the paper's side,
  *contradicts* when it excludes zero on the other side, *cannot tell* when it holds zero (then the smallest
  effect the spread could detect is given: the true difference that a new campaign of the same seeds would find
  on the paper's side 80% of the time, (t(0.975, n - 1) + t(0.80, n - 1)) * s / sqrt(n)).
- **Size**, from the interval and the paper's effect: *as large as the paper's* when the interval holds the
  effect, *smaller than the paper's* when it lies on zero's side of it, *larger than the paper's* when beyond it.
  The paper's effect at our scale is always translated by one rule: the paper's relative change (its arm over
  its baseline, minus one) times our baseline's mean. Where the paper measures the quantity differently (time on
  its GPUs, another reading of the perplexity) or gives no figure for it, the size is *not comparable*, and the
  reason is given.

The side is the sign of a difference that goes the paper's way: negative for a perplexity or a time, positive
for a GLUE score or a speed.

The same rule gates a baseline: an encoder counts in a comparison only when it beats its own untrained
architecture (the same head, fine-tuning and seeds) with direction *supports* on the positive side (`gate`).

A comparison whose arm has no runs yet reads *not measured*, with the command that would measure it; one whose
runs pair fewer than 2 seeds (a time: on one recorded kind of CPU) reads *fewer than 2 paired seeds*. Neither is
a direction.
"""

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from scipy import stats

SUPPORTS, CONTRADICTS, CANNOT_TELL = "supports", "contradicts", "cannot tell"
AS_LARGE, SMALLER, LARGER = "as large as the paper's", "smaller than the paper's", "larger than the paper's"
NOT_COMPARABLE = "not comparable"
PASSES, FAILS, NOT_RUN = "passes", "fails", "not run"
NOT_MEASURED, TOO_FEW = "not measured", "fewer than 2 paired seeds"
CONFIDENCE = 0.95
POWER = 0.80


@dataclass(frozen=True)
class Verdict:
    direction: str  # SUPPORTS, CONTRADICTS or CANNOT_TELL
    size: str  # AS_LARGE, SMALLER, LARGER or NOT_COMPARABLE
    mean: float  # the mean paired difference
    low: float  # its 95% interval
    high: float
    pairs: int
    side: int  # +1 or -1: the sign of a difference that goes the paper's way
    paper_effect: Optional[float]  # at our scale; None where not comparable
    why_not_comparable: str  # the reason, where the size is NOT_COMPARABLE
    detectable: float  # the smallest effect (absolute) that the spread would detect with 80% power

    @property
    def words(self) -> str:
        """The verdict in two words, direction then size: what the report and the README quote."""
        return f"{self.direction}, {self.size}"

    def interval(self, digits: int = 1) -> str:
        return f"{self.mean:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}]"

    def as_dict(self) -> dict:
        return {
            "paper_effect": None if self.paper_effect is None else round(self.paper_effect, 3),
            "mean": round(self.mean, 3),
            "interval": [round(self.low, 3), round(self.high, 3)],
            "pairs": self.pairs,
            "direction": self.direction,
            "size": self.size,
            "why_not_comparable": self.why_not_comparable or None,
            "detectable": round(self.detectable, 3) if self.direction == CANNOT_TELL else None,
        }


def t_quantile(probability: float, pairs: int) -> float:
    return float(stats.t.ppf(probability, pairs - 1))


def verdict(
    differences: Sequence[float], side: int, paper_effect: Optional[float], why_not_comparable: str = ""
) -> Verdict:
    """The verdict on `differences` (the paper's arm minus its baseline, one per seed): `side` is +1 or -1 (the
    paper's direction), `paper_effect` the paper's effect at our scale, or None with `why_not_comparable`."""
    if len(differences) < 2:
        raise ValueError(f"a verdict needs at least 2 paired seeds, got {len(differences)}")
    if side not in (1, -1):
        raise ValueError(f"the paper's side is +1 or -1, got {side}")
    if paper_effect is None and not why_not_comparable:
        raise ValueError("an effect that is not comparable needs its reason")
    if paper_effect is not None and side * paper_effect <= 0:
        raise ValueError(f"the paper's effect {paper_effect:+g} is not on the paper's side ({side:+d})")
    pairs = len(differences)
    mean = statistics.mean(differences)
    error = statistics.stdev(differences) / pairs**0.5
    half_width = t_quantile(0.5 + CONFIDENCE / 2, pairs) * error
    low, high = mean - half_width, mean + half_width
    # Along the paper's direction: the interval as [near, far] and the effect as a positive distance.
    near, far = sorted((side * low, side * high))
    direction = SUPPORTS if near > 0 else CONTRADICTS if far < 0 else CANNOT_TELL
    if paper_effect is None:
        size = NOT_COMPARABLE
    else:
        effect = side * paper_effect
        size = AS_LARGE if near <= effect <= far else SMALLER if far < effect else LARGER
    detectable = half_width + t_quantile(POWER, pairs) * error
    return Verdict(
        direction, size, mean, low, high, pairs, side, paper_effect, why_not_comparable, detectable
    )


@dataclass(frozen=True)
class Gate:
    result: str  # PASSES, FAILS or NOT_RUN
    verdict: Optional[
        Verdict
    ]  # the encoder minus its untrained architecture, where both ran on 2 seeds or more

    def as_dict(self) -> dict:
        if self.verdict is None:
            return {"result": self.result, "interval": None}
        interval = self.verdict.interval()
        if f"{self.verdict.low:+.1f}" == f"{self.verdict.high:+.1f}":
            # Equal differences in every seed (RTE's 277 examples make that likely): a zero-width interval
            # measures no spread, and says so.
            interval += ", the same in each seed"
        return {"result": self.result, "interval": interval}


def gate(encoder: dict, untrained: dict) -> Gate:
    """Whether an encoder (scores by seed) beats its untrained architecture (the same seeds) by the rule."""
    seeds = sorted(set(encoder) & set(untrained))
    if len(seeds) < 2:
        return Gate(NOT_RUN, None)
    differences = [encoder[seed] - untrained[seed] for seed in seeds]
    result = verdict(differences, 1, None, "a gate asks for the direction only")
    return Gate(PASSES if result.direction == SUPPORTS else FAILS, result)
