"""maelmo_plugin/arena/unigram_floor.py: the word-frequency floor."""

import pytest

from maelmo_plugin.arena import unigram_floor as unigram
from maelmo_plugin.common.wordpiece import WordpieceTokenizer, wordpiece_entries
from tests import PROJECT_ROOT

FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "lm"


def test_the_unigram_baseline_scores_each_validation_piece_by_its_smoothed_training_frequency():
    # counts 2 and 1 (+1 each) over 3 pieces + 3 entries: p = 3/6 and 2/6, perplexity (1/2 * 1/3) ** -1/2
    assert unigram.unigram_perplexity([1, 1, 2], [1, 2], vocabulary_size=3) == pytest.approx(6**0.5)


def test_the_floor_of_two_files_tokenizes_them_as_pre_training_does(tmp_path):
    vocab = str(FIXTURES / "vocab.txt")
    train, valid = tmp_path / "train.txt", tmp_path / "valid.txt"
    train.write_text("the cat sat\n\nthe dog\n")
    valid.write_text("the cat\n")
    tokenizer = WordpieceTokenizer(vocab)
    pieces = [piece for line in ("the cat sat", "the dog") for piece in tokenizer.batch_ids([line])[0]]
    scored = tokenizer.batch_ids(["the cat"])[0]
    expected = unigram.unigram_perplexity(pieces, scored, len(wordpiece_entries(vocab)))
    assert unigram.unigram_floor(str(train), str(valid), vocab) == pytest.approx(expected)
