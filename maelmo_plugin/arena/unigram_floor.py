"""
The perplexity of a model that ignores context: each word-piece predicted from its frequency in the training
text alone (add-one smoothed). A masked LM must beat it to have learned anything from context, so the arena's
tuning record and the reproduction's report give it beside each masked perplexity.

Both files are tokenized by the plugin's word-piece tokenizer, as the pre-training reader does; blank lines
are skipped. Every validation word-piece is scored (masking picks 15% of them at random, so the expected
score of a unigram guess is the same on the masked ones).
"""

import collections
import math
from pathlib import Path

from maelmo_plugin.common.wordpiece import WordpieceTokenizer, wordpiece_entries

# A masked LM has learned from context once its perplexity is this far below the floor: an encoder left at an
# unsuited rate ends within about 10% of it (benchmarks/encoder_learning_rates.py's record).
LEARNED = 0.8


def unigram_perplexity(train: list, valid: list, vocabulary_size: int) -> float:
    """exp of the mean negative log-probability of `valid`'s ids under `train`'s add-one smoothed counts."""
    counts = collections.Counter(train)
    total = len(train) + vocabulary_size
    return math.exp(-sum(math.log((counts[i] + 1) / total) for i in valid) / len(valid))


def ids(tokenizer: WordpieceTokenizer, path: str) -> list:
    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [piece for encoded in tokenizer.batch_ids(lines) for piece in encoded]


def unigram_floor(train: str, valid: str, vocab: str) -> float:
    """The floor of the text files `train` and `valid` with the word-piece vocabulary `vocab`."""
    tokenizer = WordpieceTokenizer(vocab)
    return unigram_perplexity(ids(tokenizer, train), ids(tokenizer, valid), len(wordpiece_entries(vocab)))
