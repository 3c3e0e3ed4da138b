import re

import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.data.tokenizers import Tokenizer

from maelmo_plugin.common.wordpiece import load_wordpiece_tokenizer
from tests import FIXTURES_ROOT, PROJECT_ROOT

VOCAB = str(FIXTURES_ROOT / "lm" / "vocab.txt")
BERT_CASED = PROJECT_ROOT.parent / "shared" / "data" / "vocab" / "bert-base-cased-vocab.txt"


def entries(path):
    return open(path, encoding="utf-8").read().splitlines()


def test_tokenizer_splits_into_word_pieces_with_the_vocab_txt_ids():
    tokenizer = Tokenizer.from_params(Params({"type": "maelmo_wordpiece", "vocab": VOCAB}))
    tokens = tokenizer.tokenize("The fox jumps over Berlin's rivers.")
    lines = entries(VOCAB)
    assert [t.text for t in tokens] == [
        "The",
        "fox",
        "jumps",
        "over",
        "Berlin",
        "'",
        "s",
        "river",
        "##s",
        ".",
    ]
    assert [t.text_id for t in tokens] == [lines.index(t.text) for t in tokens]


def test_batch_ids_are_the_transformers_calls_ids_and_never_truncated():
    tokenizer = Tokenizer.from_params(Params({"type": "maelmo_wordpiece", "vocab": VOCAB}))
    texts = ["The fox jumps over Berlin's rivers.", "", "  ", "rivers " * 600, "[CLS] The [MASK] ."]
    expected = tokenizer.hf_tokenizer(texts, add_special_tokens=False)["input_ids"]
    assert tokenizer.batch_ids(texts) == expected
    assert len(expected[3]) == 1200  # past the model's 512: no truncation
    # A tokenizer.json may carry truncation and padding; the ids of a corpus ignore both.
    tokenizer.hf_tokenizer.backend_tokenizer.enable_truncation(4)
    tokenizer.hf_tokenizer.backend_tokenizer.enable_padding(length=16)
    assert tokenizer.batch_ids(texts) == expected


def test_casing_is_inferred_from_the_vocabulary(tmp_path):
    uncased = tmp_path / "vocab.txt"
    uncased.write_text("\n".join(e for e in entries(VOCAB) if e.startswith("[") or e == e.lower()) + "\n")
    assert load_wordpiece_tokenizer(str(uncased)).tokenize("The Fox") == ["the", "fox"]
    assert load_wordpiece_tokenizer(VOCAB).tokenize("The fox") == ["The", "fox"]


def test_vocabulary_index_equals_word_piece_id_and_survives_an_archive_round_trip(tmp_path):
    vocab = Vocabulary.from_params(Params({"type": "maelmo_wordpiece", "vocab": VOCAB}))
    expected = {entry: index for index, entry in enumerate(entries(VOCAB))}
    assert vocab.get_token_to_index_vocabulary("wordpieces") == expected
    vocab.save_to_files(str(tmp_path))
    vocab_class, _ = Vocabulary.resolve_class_name("maelmo_wordpiece")  # as load_archive does
    reloaded = vocab_class.from_files(str(tmp_path))
    assert reloaded.get_token_to_index_vocabulary("wordpieces") == expected


@pytest.mark.parametrize("special", ["[MASK]", "[CLS]", "[SEP]", "[UNK]"])
def test_missing_special_tokens_are_a_configuration_error(tmp_path, special):
    lacking = tmp_path / "vocab.txt"
    lacking.write_text("\n".join(e for e in entries(VOCAB) if e != special) + "\n")
    message = re.escape(f"{str(lacking)!r} lacks the special tokens [{special!r}]") + ".*maelmo maelmo-vocab"
    with pytest.raises(ConfigurationError, match=message):
        load_wordpiece_tokenizer(str(lacking))


def test_pad_must_be_the_first_entry(tmp_path):
    pad_last = tmp_path / "vocab.txt"
    lines = entries(VOCAB)
    pad_last.write_text("\n".join(lines[1:] + lines[:1]) + "\n")
    with pytest.raises(ConfigurationError, match=r"\[PAD\] has id 190"):
        load_wordpiece_tokenizer(str(pad_last))


def test_an_unknown_name_offline_is_a_configuration_error_naming_it():
    with pytest.raises(ConfigurationError, match="no-such-tokenizer-xyz"):
        load_wordpiece_tokenizer("no-such-tokenizer-xyz")


@pytest.mark.parametrize("path", ["training/vocab.txt", "./vocab", "/no/such/folder"])
def test_a_missing_vocab_file_is_said_to_be_missing_not_a_bad_file(tmp_path, monkeypatch, path):
    # A relative path read from another working directory is the usual cause: say where it was looked for.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        ConfigurationError, match=f"no such file: {re.escape(repr(path))} .*{re.escape(str(tmp_path))}"
    ):
        load_wordpiece_tokenizer(path)


@pytest.mark.skipif(not BERT_CASED.exists(), reason="the shared BERT vocabulary is not on this machine")
def test_the_papers_bert_base_cased_vocabulary_loads_offline():
    tokenizer = load_wordpiece_tokenizer(str(BERT_CASED))
    assert len(tokenizer.get_vocab()) == 28996
    ids = tokenizer("Masked ELMo", add_special_tokens=False)["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids) == ["Mask", "##ed", "E", "##LM", "##o"]
    assert tokenizer.convert_tokens_to_ids(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]) == [
        0,
        100,
        101,
        102,
        103,
    ]


def test_special_tokens_wrap_each_text_when_asked():
    tokenizer = Tokenizer.from_params(
        Params({"type": "maelmo_wordpiece", "vocab": VOCAB, "add_special_tokens": True})
    )
    batch = tokenizer.batch_tokenize(["The fox.", "A dog"])
    assert [[t.text for t in tokens] for tokens in batch] == [
        ["[CLS]", "The", "fox", ".", "[SEP]"],
        ["[CLS]", "A", "dog", "[SEP]"],
    ]
    assert [t.text_id for t in batch[1]] == [2, entries(VOCAB).index("A"), entries(VOCAB).index("dog"), 3]
