"""The word-level Masked ELMo embedder: `maelmo_masked_elmo_embedder` on the word-pieces, pooled per word."""

import pytest
import torch
from allennlp.common.checks import ConfigurationError

from maelmo_plugin.lm.token_embedders import MaskedElmoMismatchedEmbedder, MaskedElmoTokenEmbedder

# [CLS] w0 w1a w1b w1c [SEP] | [CLS] w0 [SEP] [PAD] ... ; the second row's second word has no pieces.
TOKEN_IDS = torch.tensor([[2, 95, 130, 174, 162, 3], [2, 39, 3, 0, 0, 0]])
OFFSETS = torch.tensor([[[1, 1], [2, 4]], [[1, 1], [-1, -1]]])


@pytest.mark.parametrize("pool", ["mean", "first"])
def test_words_pool_their_pieces(masked_elmo_archive, pool):
    torch.manual_seed(0)
    embedder = MaskedElmoMismatchedEmbedder(masked_elmo_archive, pool=pool, dropout=0.0).eval()
    with torch.no_grad():
        words = embedder(TOKEN_IDS, torch.ones(2, 2, dtype=torch.bool), OFFSETS, TOKEN_IDS != 0)
        pieces = MaskedElmoTokenEmbedder.forward(embedder, TOKEN_IDS)  # the word-pieces, unpooled
    assert words.shape == (2, 2, embedder.get_output_dim()) == (2, 2, 16)
    second_word = pieces[0, 2:5].mean(0) if pool == "mean" else pieces[0, 2]
    torch.testing.assert_close(words[0, 0], pieces[0, 1])
    torch.testing.assert_close(words[0, 1], second_word)
    torch.testing.assert_close(words[1, 0], pieces[1, 1])
    assert not words[1, 1].any()  # no pieces: a zero vector


def test_an_unknown_pooling_is_refused(masked_elmo_archive):
    with pytest.raises(ConfigurationError, match="'last'"):
        MaskedElmoMismatchedEmbedder(masked_elmo_archive, pool="last")
