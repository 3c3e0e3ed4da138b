"""
The rule that chooses an arm's learning rate from its sweep, on validation perplexity and never on GLUE: the
lowest rate within `TIED` of the lowest final perplexity. `maelmo-arena` chooses every arm's rate by it, and the
reproduction chose its encoders' rates by it (reproduction/tuning.py).
"""

from collections.abc import Callable, Sequence
from typing import Optional, TypeVar

Run = TypeVar("Run")

# Rates whose final perplexities are this close count as tied, and the lowest of them is chosen: on one seed of
# one small budget such a difference is noise, while a higher rate grows larger weights (the reproduction's ELMo
# biLM at 8e-3 ended 0.2% below 4e-3 with LSTM weights 2 to 4 times Masked ELMo's, and fine-tuned below its
# untrained architecture).
TIED = 0.01


def lowest_tied_rate(
    runs: Sequence[Run], rate: Callable[[Run], float], final: Callable[[Run], float]
) -> Optional[Run]:
    """
    The run with the lowest `rate` among those whose `final` perplexity is within `TIED` (1%) of the lowest;
    None for no runs. Of equal rates, the lower perplexity.
    """
    if not runs:
        return None
    lowest = min(final(run) for run in runs)
    tied = [run for run in runs if final(run) <= (1 + TIED) * lowest]
    return min(tied, key=lambda run: (rate(run), final(run)))
