import os
import pickle
import random
from pathlib import Path

import pytest
from allennlp.common import Params
from allennlp.data.tokenizers.sentence_splitter import SentenceSplitter, SpacySentenceSplitter
from spacy.pipeline.sentencizer import Sentencizer as SpacySentencizer

from maelmo_plugin.common.wordpiece import WordpieceTokenizer
from maelmo_plugin.lm.dataset_readers.mlm_corpus import MlmCorpusReader
from maelmo_plugin.lm.dataset_readers.sentencizer import Sentencizer, splitter_setting
from maelmo_plugin.lm.dataset_readers.token_store import TokenStore
from tests import FIXTURES_ROOT, PROJECT_ROOT

SPACY = SpacySentenceSplitter(language="blank:en", rule_based=True)

# Words that decide spaCy's sentences: abbreviations that are one token ("Mr.", "a.m."), numbers, quotes and
# brackets after a full stop, runs of whitespace (a token of their own), a sentence-final character outside
# ASCII and one outside the Basic Multilingual Plane, and an emoji (outside it too, but not sentence-final).
PIECES = [
    *"ab A.!?\"')(,;:-…。！？3",
    " ",
    " ",
    "  ",
    "\t",
    "\u00a0",
    "\u2028",
    "Mr.",
    "a.m.",
    "U.S.",
    "e.g.",
    "3.5",
    "n't",
    "...",
    "?!",
    '."',
    '".',
    "--",
    "𑁇",
    "😀",
    "Hello",
    "world",
]


@pytest.fixture(scope="module")
def sentencizer() -> Sentencizer:
    return Sentencizer()


def test_the_sentences_of_spacy_rules_on_hand_picked_texts(sentencizer):
    cases = {
        "He met Mr. Smith. Then he left.": ["He met Mr. Smith.", "Then he left."],
        "It was 5 a.m . Then": ["It was 5 a.m .", "Then"],
        'He said "Stop." Then': ['He said "Stop."', "Then"],
        "Pi is 3.14, roughly. Yes": ["Pi is 3.14, roughly.", "Yes"],
        "Hello.  World": ["Hello.", "World"],
        "Trailing.  ": ["Trailing.", ""],
        "No full stop": ["No full stop"],
        "": [],
        "  ": [""],
    }
    for text, expected in cases.items():
        assert SPACY.split_sentences(text) == expected, text  # the reference says so too
        assert sentencizer.split_sentences(text) == expected, text


def test_the_sentences_of_spacy_rules_on_random_texts(sentencizer):
    rng = random.Random(0)
    texts = ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30))) for _ in range(3000)]
    assert sentencizer.batch_split_sentences(texts) == SPACY.batch_split_sentences(texts)


def test_the_sentences_of_spacy_rules_on_real_paragraphs(sentencizer):
    lines = [line.strip() for line in (FIXTURES_ROOT / "lm" / "corpus.txt").open(encoding="utf-8")]
    lines += [
        line.strip()
        for name in ("train.txt", "valid.txt")
        for line in (PROJECT_ROOT / "training_config" / "lm" / "sample" / name).open(encoding="utf-8")
    ]
    lines = [line for line in lines if line]
    assert len(lines) > 100
    assert sentencizer.batch_split_sentences(lines) == SPACY.batch_split_sentences(lines)


@pytest.mark.slow
def test_the_sentences_of_spacy_rules_on_wikitext_2(sentencizer):
    shared = Path(os.environ.get("MAELMO_SHARED_DATA", PROJECT_ROOT.parent / "shared" / "data"))
    path = shared / "wikitext-2" / "train.txt"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    lines = [line.strip() for line in path.open(encoding="utf-8") if line.strip()]
    assert sentencizer.batch_split_sentences(lines) == SPACY.batch_split_sentences(lines)


def test_every_sentence_final_character_of_spacy_ends_a_sentence(sentencizer):
    # Each of the 128, in the plane or beyond it, reaches the tokenizer: none is passed over by the search.
    for character in SpacySentencizer.default_punct_chars:
        text = f"One{character} Two"
        assert sentencizer.split_sentences(text) == SPACY.split_sentences(text), repr(character)


def test_a_long_word_full_of_stops_is_split_as_spacy_splits_it(sentencizer):
    text = "a." * 2000 + " Then. " + "x" * 5000 + ". End"
    assert sentencizer.split_sentences(text) == SPACY.split_sentences(text)


def test_it_is_registered_and_pickles():
    splitter = SentenceSplitter.from_params(Params({"type": "maelmo_sentencizer"}))
    assert isinstance(splitter, Sentencizer)
    copy = pickle.loads(pickle.dumps(splitter))
    assert copy.split_sentences("One. Two") == ["One.", "Two"]


def test_a_store_records_only_a_splitter_with_other_sentences(tmp_path):
    assert splitter_setting(None) is None
    assert splitter_setting(Sentencizer()) is None
    assert splitter_setting(SPACY) is None
    assert splitter_setting(Sentencizer(language="de")) == {"spacy_rule_based": "blank:de"}

    vocab = str(PROJECT_ROOT / "training_config" / "lm" / "sample" / "vocab.txt")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("One. Two.\n\nThree four.\n", encoding="utf-8")

    def reader(splitter=None) -> MlmCorpusReader:
        return MlmCorpusReader(WordpieceTokenizer(vocab), sentence_splitter=splitter)

    default_store = TokenStore.prepare(reader(), [str(corpus)], str(tmp_path / "default"), quiet=True)
    assert "sentence_splitter" not in default_store.manifest["reader"]
    assert default_store.mismatch(reader(SPACY)) is None  # the same sentences: the store is theirs too
    problem = default_store.mismatch(reader(Sentencizer(language="de")))
    assert "sentence_splitter: the store has None, the config {'spacy_rule_based': 'blank:de'}" in problem
    # And the other way round: a store of other sentences is not one for the default reader.
    german = TokenStore.prepare(reader(Sentencizer("de")), [str(corpus)], str(tmp_path / "de"), quiet=True)
    assert "sentence_splitter: the store has {'spacy_rule_based': 'blank:de'}" in german.mismatch(reader())
