"""
spaCy's rule-based sentences without a spaCy `Doc` per paragraph: the corpus reader's default splitter.
"""

import functools
import re
from typing import Any, Optional

from allennlp.data.tokenizers.sentence_splitter import SentenceSplitter, SpacySentenceSplitter

# The cache of tokenized words holding a sentence-final character: WikiText-2 has about 5,000 distinct ones.
# A longer word is not cached, so that hostile text cannot fill memory with keys.
_CACHED_WORDS = 1 << 16
_LONGEST_CACHED_WORD = 64
# What every token store was prepared with before stores recorded their splitter (`splitter_setting`).
_DEFAULT_SPACY_PIPELINE = "blank:en"


@SentenceSplitter.register("maelmo_sentencizer")
class Sentencizer(SentenceSplitter):
    """
    The sentences of spaCy's rule-based sentencizer on a blank pipeline (AllenNLP's
    `{"type": "spacy", "language": "blank:en", "rule_based": true}`), the same strings, at a fraction of the
    cost: it tokenizes only the words that can end a sentence.

    spaCy's sentencizer starts a sentence at the first token after a sentence-final character (".", "!",
    "?" and 125 others, `Sentencizer.default_punct_chars`) that is neither punctuation nor such a character.
    spaCy's tokenizer splits a text at whitespace first and tokenizes each whitespace-free word on its own
    (prefixes, suffixes, infixes, exceptions such as "Mr."), so whether and where a word holds such a token
    depends on that word alone. This splitter asks spaCy's tokenizer for the tokens of the words that hold one
    of those characters, and of the words after them until the sentence starts; every other word, most of
    the text, is never tokenized. Splitting costs a few percent of the word-piece tokenization instead of
    more than all of it (`benchmarks/corpus_preparation.py`), and the pre-training stores stay byte for byte
    what the spaCy splitter gives (`tests/lm/dataset_readers/sentencizer_test.py` compares the two on
    random and real text).

    Registered as a `SentenceSplitter` with name "maelmo_sentencizer".

    # Parameters

    language : `str`, optional (default = `"en"`)
        The language of spaCy's blank pipeline whose tokenizer decides what a word's tokens are
        (`spacy.blank(language)`): rules only, no model to download.
    """

    def __init__(self, language: str = "en") -> None:
        self._language = language
        self._build()

    def _build(self) -> None:
        import spacy
        from spacy.pipeline.sentencizer import Sentencizer as SpacySentencizer

        self._tokenizer = spacy.blank(self._language).tokenizer
        self._enders = frozenset(SpacySentencizer.default_punct_chars)
        # A character that may end a sentence: the sentence-final characters of the Basic Multilingual Plane, and
        # any character beyond it (a few of them are sentence-final; the rest, emoji mostly, are passed over in
        # `_next_ender`). One class of the 59 beyond it makes the search about 20 times slower per character.
        plane = "".join(sorted(character for character in self._enders if ord(character) <= 0xFFFF))
        self._may_end = re.compile(f"[{re.escape(plane)}\\U00010000-\\U0010FFFF]")
        # The last whitespace before a position (searched between a space and the position): where a word
        # starts, as spaCy's tokenizer cuts words (`str.isspace`, which `\\s` matches exactly).
        self._last_whitespace = re.compile(r"\s(?=\S*\Z)")
        self._run = re.compile(r"\s+|\S+")  # a word, or the whitespace between two
        self._word_tokens = functools.lru_cache(maxsize=_CACHED_WORDS)(self._tokens_of_word)

    def split_sentences(self, text: str) -> list[str]:
        if not text:
            return []
        starts = [0, *self._sentence_starts(text), len(text)]
        return [text[start:end].strip() for start, end in zip(starts, starts[1:])]

    def batch_split_sentences(self, texts: list[str]) -> list[list[str]]:
        return [self.split_sentences(text) for text in texts]

    def _sentence_starts(self, text: str) -> list[int]:
        """Where each sentence after the first starts: spaCy's `Sentencizer.predict` over the words that matter."""
        starts = []
        position = 0  # a word's start: no sentence-final token seen since the last sentence started
        ender = self._next_ender(text, 0)
        while ender >= 0:
            # Back to the start of the word holding the character (after `position`, a word boundary).
            position = max(position, text.rfind(" ", position, ender) + 1)
            inner = self._last_whitespace.search(text, position, ender)
            if inner is not None:
                position = inner.end()
            seen_ender = False
            while position < len(text):
                run = self._run.match(text, position)
                assert run is not None  # a run of whitespace, or of anything else, starts at every position
                end = run.end()
                if text[position].isspace():
                    # One space after a word belongs to that word; the rest of the run is a token of its own.
                    token = position + 1 if text[position] == " " else position
                    if seen_ender and token < end:
                        starts.append(token)
                        seen_ender = False
                    position = end
                else:
                    word = text[position:end]
                    tokens = (
                        self._word_tokens(word)
                        if len(word) <= _LONGEST_CACHED_WORD
                        else self._tokens_of_word(word)
                    )
                    for offset, is_ender, is_punct in tokens:
                        if seen_ender and not is_punct and not is_ender:
                            starts.append(position + offset)
                            seen_ender = False
                        elif is_ender:
                            seen_ender = True
                    position = end
                if not seen_ender:
                    break
            ender = self._next_ender(text, position)
        return starts

    def _next_ender(self, text: str, position: int) -> int:
        """The index of the first sentence-final character at or after `position`, -1 if none."""
        while (match := self._may_end.search(text, position)) is not None:
            if text[match.start()] in self._enders:
                return match.start()
            position = match.start() + 1
        return -1

    def _tokens_of_word(self, word: str) -> tuple[tuple[int, bool, bool], ...]:
        """(offset, is a sentence-final character, is punctuation) of each of spaCy's tokens of one word."""
        return tuple(
            (token.idx, token.text in self._enders, token.is_punct) for token in self._tokenizer(word)
        )

    def __getstate__(self) -> dict[str, Any]:
        # Pickled into `maelmo-prepare --processes` workers: the language only, the rest is rebuilt there.
        return {"_language": self._language}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._language = state["_language"]
        self._build()

    @property
    def language(self) -> str:
        return self._language

    def _to_params(self) -> dict[str, Any]:
        return {"type": "maelmo_sentencizer", "language": self._language}


def splitter_setting(splitter: Optional[SentenceSplitter]) -> Optional[dict[str, Any]]:
    """
    How a token store records the sentence splitter it was prepared with: `None` for spaCy's rule-based
    sentences on its blank English pipeline (`None`, the default, this class, and AllenNLP's `spacy` splitter
    so configured all give them; stores made before the setting existed were made so), else what tells the
    splitter's sentences apart.
    """
    if splitter is None:
        return None
    if isinstance(splitter, Sentencizer):
        pipeline = f"blank:{splitter.language}"
    elif isinstance(splitter, SpacySentenceSplitter):
        if not splitter._rule_based:  # the pipeline's parser decides
            return {"spacy_parser": splitter._language}
        pipeline = splitter._language
    else:  # its class, as nothing else is known to tell its sentences apart
        return {"type": f"{type(splitter).__module__}.{type(splitter).__qualname__}"}
    return None if pipeline == _DEFAULT_SPACY_PIPELINE else {"spacy_rule_based": pipeline}
