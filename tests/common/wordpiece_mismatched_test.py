"""The word-level indexer: each word's span of word-pieces, in the [CLS] ... [SEP] layout of pre-training."""

import torch
from allennlp.data import Batch, Instance, Token, Vocabulary
from allennlp.data.fields import TextField

from maelmo_plugin.common.wordpiece import WordpieceTokenizer
from maelmo_plugin.common.wordpiece_mismatched import WordpieceMismatchedIndexer
from tests import FIXTURES_ROOT

VOCAB = str(FIXTURES_ROOT / "lm" / "vocab.txt")
ZERO_WIDTH_SPACE = "\u200b"  # a word without any word-piece


def tensors(sentences):
    indexer = WordpieceMismatchedIndexer(VOCAB)
    fields = [{"words": TextField([Token(word) for word in words], {"m": indexer})} for words in sentences]
    batch = Batch([Instance(field) for field in fields])
    batch.index_instances(Vocabulary())
    return batch.as_tensor_dict()["words"]["m"]


def test_offsets_point_at_each_words_pieces(caplog):
    words = ["The", "unbelievable", "king", ZERO_WIDTH_SPACE, "sleeps"]
    output = tensors([words])
    assert "1 word(s) without any word-piece" in caplog.text  # counted and logged, not dropped
    tokenizer = WordpieceTokenizer(VOCAB)
    pieces = tokenizer.ids_to_pieces(output["token_ids"][0].tolist())
    assert pieces[0] == "[CLS]" and pieces[-1] == "[SEP]"
    # "unbelievable" is 12 pieces in the fixture vocabulary (u ##n ##b ...); the zero-width space has none.
    assert output["offsets"][0].tolist() == [[1, 1], [2, 13], [14, 14], [-1, -1], [15, 15]]
    assert pieces[2:14] == tokenizer.ids_to_pieces(tokenizer.batch_ids(["unbelievable"])[0])
    assert pieces[14] == "king" and pieces[15] == "sleeps"
    assert output["mask"][0].tolist() == [True] * 5
    assert output["wordpiece_mask"][0].tolist() == [True] * 17


def test_a_batch_is_padded_with_pad_and_masked():
    output = tensors([["The", "king", "sleeps", "."], ["Berlin"]])
    assert output["token_ids"].shape == (2, 6) and output["offsets"].shape == (2, 4, 2)
    assert output["token_ids"][1, 3:].tolist() == [0, 0, 0]  # [PAD] is id 0
    assert output["mask"][1].tolist() == [True, False, False, False]
    assert output["wordpiece_mask"][1].tolist() == [True, True, True, False, False, False]
    assert output["offsets"][1].tolist() == [[1, 1], [0, 0], [0, 0], [0, 0]]
    assert output["token_ids"].dtype == torch.long
