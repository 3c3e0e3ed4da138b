"""
The perplexity of a model that ignores context: each word-piece predicted from its frequency in the training
text alone (add-one smoothed). A masked LM must beat it to have learned anything from context, so the
reproduction report gives it beside each masked perplexity.

    .venv/bin/python -m reproduction.unigram_perplexity TRAIN.txt VALID.txt VOCAB.txt

Both files are tokenized by the plugin's word-piece tokenizer, as the pre-training reader does; blank lines
are skipped. Every validation word-piece is scored (masking picks 15% of them at random, so the expected
score of a unigram guess is the same on the masked ones).
"""

import argparse
import collections
import math
from pathlib import Path

from maelmo_plugin.common.wordpiece import WordpieceTokenizer, wordpiece_entries


def unigram_perplexity(train: list, valid: list, vocabulary_size: int) -> float:
    """exp of the mean negative log-probability of `valid`'s ids under `train`'s add-one smoothed counts."""
    counts = collections.Counter(train)
    total = len(train) + vocabulary_size
    return math.exp(-sum(math.log((counts[i] + 1) / total) for i in valid) / len(valid))


def ids(tokenizer: WordpieceTokenizer, path: str) -> list:
    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [piece for encoded in tokenizer.batch_ids(lines) for piece in encoded]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0])
    parser.add_argument("train")
    parser.add_argument("valid")
    parser.add_argument("vocab", help="the word-piece vocab.txt the models were trained with")
    args = parser.parse_args()
    tokenizer = WordpieceTokenizer(args.vocab)
    valid = ids(tokenizer, args.valid)
    score = unigram_perplexity(ids(tokenizer, args.train), valid, len(wordpiece_entries(args.vocab)))
    print(f"unigram perplexity of {args.valid} ({len(valid):,} word-pieces): {score:.1f}")


if __name__ == "__main__":
    main()
