import math

import pytest

from maelmo_plugin.training.token_perplexity import TokenPerplexity


def test_perplexity_is_per_token_not_per_batch():
    perplexity = TokenPerplexity()
    perplexity(2.0, 1)  # one masked token, cross-entropy 2
    perplexity(3.0, 3)  # three tokens, 1 each
    # exp(5 / 4); AllenNLP's Perplexity gives exp((2 + 1) / 2) = exp(1.5).
    assert perplexity.get_metric(reset=True) == pytest.approx(math.exp(1.25))
    assert perplexity.get_metric() == 0.0  # reset: nothing counted
