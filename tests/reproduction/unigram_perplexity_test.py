"""reproduction/unigram_perplexity.py: the word-frequency floor."""

import pytest

from reproduction import unigram_perplexity as unigram


def test_the_unigram_baseline_scores_each_validation_piece_by_its_smoothed_training_frequency():
    # counts 2 and 1 (+1 each) over 3 pieces + 3 entries: p = 3/6 and 2/6, perplexity (1/2 * 1/3) ** -1/2
    assert unigram.unigram_perplexity([1, 1, 2], [1, 2], vocabulary_size=3) == pytest.approx(6**0.5)
