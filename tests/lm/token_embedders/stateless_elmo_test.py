"""
The tiny ELMo-format fixture loads in AllenNLP's ELMo, and `maelmo_stateless_elmo` makes a sentence's
embedding independent of the batches before it, unlike AllenNLP's stateful `elmo_token_embedder`.
"""

import h5py
import numpy
import pytest
import torch
from allennlp.common import Params
from allennlp.modules.elmo import Elmo, batch_to_ids
from allennlp.modules.token_embedders import TokenEmbedder

from maelmo_plugin.lm.token_embedders import StatelessElmoTokenEmbedder
from tests.fixtures.elmo import CELLS, PROJECTION_DIM

SENTENCE = batch_to_ids([["The", "cat", "sat", "on", "the", "mat", "."]])
OTHERS = [
    batch_to_ids([["A", "completely", "different", "sentence", "comes", "first", "!"]]),
    batch_to_ids([["Two", "of", "them"], ["in", "one", "earlier", "batch"]]),
]


def embedder(kind, tiny_elmo):
    options, weights = tiny_elmo
    params = {"type": kind, "options_file": options, "weight_file": weights, "dropout": 0.0}
    return TokenEmbedder.from_params(Params(params)).eval()


def test_tiny_elmo_loads_in_allennlps_elmo_with_the_written_weights(tiny_elmo):
    options, weights = tiny_elmo
    elmo = Elmo(options, weights, num_output_representations=1, dropout=0.0)
    output = elmo(batch_to_ids([["The", "cat", "sat", "."], ["Hi"]]))
    representation = output["elmo_representations"][0]
    assert representation.shape == (2, 4, 2 * PROJECTION_DIM)
    assert output["mask"].tolist() == [[True] * 4, [True, False, False, False]]
    assert torch.isfinite(representation).all() and representation.abs().sum() > 0
    character_encoder = elmo._elmo_lstm._token_embedder
    lstm = elmo._elmo_lstm._elmo_lstm
    with h5py.File(weights, "r") as fin:
        # Row 0 is AllenNLP's padding character, the file's rows follow.
        char_embed = character_encoder._char_embedding_weights.detach().numpy()
        numpy.testing.assert_array_equal(char_embed[1:], fin["char_embed"][...])
        assert not char_embed[0].any()
        numpy.testing.assert_array_equal(
            character_encoder._projection.weight.detach().numpy(), fin["CNN_proj/W_proj"][...].T
        )
        cell = fin["RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell"]
        numpy.testing.assert_array_equal(
            lstm.backward_layer_1.state_projection.weight.detach().numpy(), cell["W_P_0"][...].T
        )
    assert lstm.forward_layer_0.cell_size == CELLS


def test_allennlps_elmo_embedder_carries_states_from_the_previous_batch(tiny_elmo):
    """The behaviour `maelmo_stateless_elmo` exists for: jiant resets these states before every batch."""
    stateful = embedder("elmo_token_embedder", tiny_elmo)
    with torch.no_grad():
        first = stateful(SENTENCE)
        stateful(OTHERS[0])
        again = stateful(SENTENCE)
    assert not torch.allclose(first, again, atol=1e-4)


BEFORE = [[], OTHERS[:1], OTHERS, OTHERS[::-1]]


@pytest.mark.parametrize("before", BEFORE, ids=["none", "one", "two", "reversed"])
def test_stateless_elmo_gives_a_sentence_the_same_output_whatever_came_before(tiny_elmo, before):
    fresh = embedder("elmo_token_embedder", tiny_elmo)
    with torch.no_grad():
        expected = fresh(SENTENCE)  # the first batch of a new ELMo starts from zero states
    stateless = embedder("maelmo_stateless_elmo", tiny_elmo)
    assert isinstance(stateless, StatelessElmoTokenEmbedder)
    with torch.no_grad():
        for batch in before:
            stateless(batch)
        output = stateless(SENTENCE)
    torch.testing.assert_close(output, expected, atol=0, rtol=0)
    assert output.shape == (1, 7, 2 * PROJECTION_DIM)
