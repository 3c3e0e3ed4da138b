"""
The rule that turns a claim's paired differences into a verdict (docs/reproduction.md, "How a verdict is
decided"), applied by draw_report.py and nowhere else:

- the 95% interval of the mean paired difference is Student's t over the seeds: mean ± t(0.975, n - 1) * s / sqrt(n)
  (with 3 seeds t = 4.30: the interval reaches 4.3 standard errors either side of the mean, not the 2 of a
  normal reading, which would call differences real that 3 seeds cannot tell from noise);
- **supports** when the interval excludes zero on the paper's side;
- **contradicts** when it excludes zero on the other side, or excludes the paper's own effect (the effect, if
  any, is smaller than the paper's: its claimed size does not hold);
- otherwise **cannot tell at this scale**, with the smallest effect the spread could have detected: the true
  difference that a new campaign of the same seeds would find on the paper's side of zero 80% of the time,
  (t(0.975, n - 1) + t(0.80, n - 1)) * s / sqrt(n).

The paper's effect is signed: a difference (the paper's arm minus its baseline) of that sign is the paper's
side; for a perplexity that is negative, for a GLUE score positive.
"""

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats

SUPPORTS, CONTRADICTS, CANNOT_TELL = "supports", "contradicts", "cannot tell at this scale"
CONFIDENCE = 0.95
POWER = 0.80


@dataclass(frozen=True)
class Verdict:
    word: str  # SUPPORTS, CONTRADICTS or CANNOT_TELL
    mean: float  # the mean paired difference
    low: float  # its 95% interval
    high: float
    pairs: int
    paper_effect: float
    detectable: float  # the smallest effect (absolute) that the spread would detect with 80% power

    def interval(self, digits: int = 1) -> str:
        return f"{self.mean:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}]"

    def line(self, digits: int = 1) -> str:
        """The verdict and its evidence in one line: what the report and the README quote."""
        text = (
            f"{self.word}: {self.interval(digits)} (95% interval, {self.pairs} paired seeds; the paper's "
            f"effect here {self.paper_effect:+.{digits}f})"
        )
        if self.word == CANNOT_TELL:
            text += f"; the smallest effect these seeds could detect: {self.detectable:.{digits}f}"
        return text


def t_quantile(probability: float, pairs: int) -> float:
    return float(stats.t.ppf(probability, pairs - 1))


def verdict(differences: Sequence[float], paper_effect: float) -> Verdict:
    """The verdict on `differences` (the paper's arm minus its baseline, one per seed) given the paper's effect."""
    if len(differences) < 2:
        raise ValueError(f"a verdict needs at least 2 paired seeds, got {len(differences)}")
    if paper_effect == 0:
        raise ValueError("the paper's effect gives the paper's side: it cannot be 0")
    pairs = len(differences)
    mean = statistics.mean(differences)
    error = statistics.stdev(differences) / pairs**0.5
    half_width = t_quantile(0.5 + CONFIDENCE / 2, pairs) * error
    low, high = mean - half_width, mean + half_width
    side = 1.0 if paper_effect > 0 else -1.0
    if side * low > 0 and side * high > 0:
        word = SUPPORTS
    elif side * low < 0 and side * high < 0 or not low <= paper_effect <= high:
        word = CONTRADICTS
    else:
        word = CANNOT_TELL
    detectable = half_width + t_quantile(POWER, pairs) * error
    return Verdict(word, mean, low, high, pairs, paper_effect, detectable)
