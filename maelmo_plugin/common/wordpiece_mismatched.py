"""
Word-level tasks (tagging) on a word-piece model: words in, word-pieces to the model, one vector per word out.
"""

import logging
from typing import Optional

import torch
from allennlp.common.util import pad_sequence_to_length
from allennlp.data.token_indexers import TokenIndexer
from allennlp.data.token_indexers.token_indexer import IndexedTokenList
from allennlp.data.tokenizers import Token
from allennlp.data.vocabulary import Vocabulary

from maelmo_plugin.common.wordpiece import WordpieceTokenizer

logger = logging.getLogger(__name__)


@TokenIndexer.register("maelmo_wordpiece_mismatched")
class WordpieceMismatchedIndexer(TokenIndexer):
    """
    Indexes the words of a word-level reader (allennlp-models' `conll2003`, any tagging reader) as the
    word-pieces of a Masked ELMo, in the layout of a sentence in pre-training, and records which pieces
    make each word, for `maelmo_masked_elmo_mismatched_embedder` to pool them back into one vector per word:

        words           EU      rejects          German   call
        word-pieces     [CLS]   EU   reject ##s  German   call   [SEP]
        position        0       1    2      3    4        5      6
        offsets                 (1,1) (2,3)      (4,4)    (5,5)          inclusive

    This is AllenNLP's `pretrained_transformer_mismatched` indexer on the plugin's own word-piece tokenizer,
    so that the vocabulary may be a plain `vocab.txt` and is copied into the archive (`maelmo_assets/`) like
    the GLUE reader's. A word without any word-piece (a lone control character) gets the offsets (-1, -1)
    and a zero vector, as in AllenNLP; such words are counted in the log.

    Registered as a `TokenIndexer` with name "maelmo_wordpiece_mismatched".

    # Parameters

    vocab : `str`
        The word-piece vocabulary of the language model (a `vocab.txt`, a tokenizer directory such as an
        export, or a hub name): see `maelmo_wordpiece`.
    lowercase : `bool`, optional (default = `None`)
        As for `maelmo_wordpiece`: `None` infers it from the vocabulary.
    serialization_dir : `str`, optional (default = `None`)
        Given by AllenNLP: where the tokenizer is copied to in training and read back from at load.
    token_min_padding_length : `int`, optional (default = `0`)
        See `TokenIndexer`.
    """

    def __init__(
        self,
        vocab: str,
        lowercase: Optional[bool] = None,
        serialization_dir: Optional[str] = None,
        token_min_padding_length: int = 0,
    ) -> None:
        super().__init__(token_min_padding_length)
        self._tokenizer = WordpieceTokenizer(vocab, lowercase, serialization_dir=serialization_dir)
        self._cls_id = self._tokenizer.token_id("[CLS]")
        self._sep_id = self._tokenizer.token_id("[SEP]")
        self._words_without_pieces = 0

    def count_vocab_items(self, token: Token, counter: dict[str, dict[str, int]]) -> None:
        pass  # the ids are the word-piece vocabulary's own

    def tokens_to_indices(self, tokens: list[Token], vocabulary: Vocabulary) -> IndexedTokenList:
        words = [token.ensure_text() for token in tokens]
        token_ids = [self._cls_id]
        offsets = []
        if words:
            encoding = self._tokenizer.batch_encodings([words], is_split_into_words=True)[0]
            token_ids += encoding.ids
            for index in range(len(words)):
                span = encoding.word_to_tokens(index)
                # +1: the pieces start after [CLS]; the offsets are inclusive.
                offsets.append((span[0] + 1, span[1]) if span is not None else (-1, -1))
        token_ids.append(self._sep_id)
        without = sum(offset == (-1, -1) for offset in offsets)
        if without:
            self._words_without_pieces += without
            logger.warning(
                "%d word(s) without any word-piece in %r get a zero vector (%d so far).",
                without,
                " ".join(words)[:200],
                self._words_without_pieces,
            )
        return {
            "token_ids": token_ids,
            "mask": [True] * len(words),  # word level: what the tagger masks with
            "offsets": offsets,
            "wordpiece_mask": [True] * len(token_ids),
        }

    def get_empty_token_list(self) -> IndexedTokenList:
        return {"token_ids": [], "mask": [], "offsets": [], "wordpiece_mask": []}

    def as_padded_tensor_dict(
        self, tokens: IndexedTokenList, padding_lengths: dict[str, int]
    ) -> dict[str, torch.Tensor]:
        # [PAD] is id 0, which is also what tells the embedder where the pieces end.
        def padded(key: str, value) -> list:
            return pad_sequence_to_length(tokens[key], padding_lengths[key], lambda: value)

        return {
            "token_ids": torch.LongTensor(padded("token_ids", 0)),
            "mask": torch.BoolTensor(padded("mask", False)),
            "offsets": torch.LongTensor(padded("offsets", (0, 0))),
            "wordpiece_mask": torch.BoolTensor(padded("wordpiece_mask", False)),
        }
