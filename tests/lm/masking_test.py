import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary

from maelmo_plugin.lm.masking import NOT_SELECTED, KeyedDraws, MlmMasking, PositionDraws, row_seed

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]"]


def make_vocab(num_words=1000):
    vocab = Vocabulary(non_padded_namespaces=["wordpieces"])
    for token in SPECIALS + [f"w{i}" for i in range(num_words)]:
        vocab.add_token_to_namespace(token, "wordpieces")
    return vocab


@pytest.fixture(scope="module")
def masking():
    return MlmMasking(make_vocab())


@pytest.fixture(scope="module")
def large_batch():
    """400k tokens: mostly words, with [CLS]/[SEP]/[PAD]/[UNK] sprinkled in."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(len(SPECIALS), len(SPECIALS) + 1000, (200, 2000), generator=generator)
    ids[:, 0] = 2  # [CLS]
    ids[:, 50::60] = 3  # [SEP]
    ids[:, -100:] = 0  # [PAD]
    ids[:, 7::97] = 1  # [UNK]
    return ids


def test_rates_on_a_large_sample(masking, large_batch):
    generator = torch.Generator().manual_seed(1)
    selected = masking.select(large_batch, 1, generator) == 0
    maskable = masking.maskable(large_batch)
    assert selected.sum() / maskable.sum() == pytest.approx(0.15, abs=0.003)
    corrupted = masking.corrupt(large_batch, selected, generator)
    became_mask = (corrupted == masking.mask_id) & selected
    changed_to_other = (corrupted != large_batch) & (corrupted != masking.mask_id) & selected
    n = selected.sum()
    assert became_mask.sum() / n == pytest.approx(0.8, abs=0.01)
    # A random replacement may draw the original id (1 in 1000 here): count "random" as not-[MASK] and
    # not-unchanged, then allow for that small share.
    assert changed_to_other.sum() / n == pytest.approx(0.1 * (1 - 1 / 1000), abs=0.005)
    kept = (corrupted == large_batch) & selected
    assert kept.sum() / n == pytest.approx(0.1, abs=0.005)


def test_special_tokens_are_never_selected_nor_drawn(masking, large_batch):
    generator = torch.Generator().manual_seed(2)
    selection = masking.select(large_batch, 4, generator)
    specials = large_batch < len(SPECIALS)
    assert (selection[specials] == NOT_SELECTED).all()
    corrupted = masking.corrupt(large_batch, selection >= 0, generator)
    # Outside the selection nothing changes, and no random replacement is a special token.
    assert torch.equal(corrupted[selection < 0], large_batch[selection < 0])
    replaced = (selection >= 0) & (corrupted != masking.mask_id)
    assert (corrupted[replaced] >= len(SPECIALS)).all()


def test_mask_sets_are_disjoint_and_each_about_fifteen_percent(masking, large_batch):
    selection = masking.select(large_batch, 4, torch.Generator().manual_seed(3))
    maskable = masking.maskable(large_batch)
    for j in range(4):
        assert (selection == j).sum() / maskable.sum() == pytest.approx(0.15, abs=0.003)
    # One index per position: disjoint by construction; together they cover about 60%.
    assert (selection >= 0).sum() / maskable.sum() == pytest.approx(0.60, abs=0.005)


def test_same_seed_same_masks_and_different_seed_different_masks(masking, large_batch):
    def draw(seed):
        generator = torch.Generator().manual_seed(seed)
        selected = masking.select(large_batch, 1, generator) == 0
        return masking.corrupt(large_batch, selected, generator)

    assert torch.equal(draw(5), draw(5))
    assert not torch.equal(draw(5), draw(6))


def test_too_many_mask_sets_is_a_configuration_error(masking):
    message = (
        r"exceed 100% of the tokens \(model\.num_mask_sets x model\.masking\.probability = 105%\): "
        r"lower model\.num_mask_sets \(sizes\.num_mask_sets in the config\) to at most 6"
    )
    with pytest.raises(ConfigurationError, match=message):
        masking.select(torch.zeros(2, 3, dtype=torch.long), 7)


def test_a_vocabulary_without_mask_is_a_configuration_error():
    vocab = Vocabulary(non_padded_namespaces=["wordpieces"])
    vocab.add_tokens_to_namespace(["[PAD]", "a", "b"], "wordpieces")
    with pytest.raises(ConfigurationError, match=r"no \[MASK\]"):
        MlmMasking(vocab)


def test_keyed_draws_give_a_row_the_same_masks_in_any_batch(masking):
    token_ids = torch.randint(10, 40, (3, 50))
    keys = torch.tensor([[0, 0, 5], [0, 1, 7], [1, 1, 7]])
    together = masking.select(token_ids, 2, KeyedDraws(13, keys))
    alone = masking.select(token_ids[1:2], 2, KeyedDraws(13, keys[1:2]))
    assert torch.equal(together[1:2], alone)
    corrupted_together = masking.corrupt(token_ids, together == 0, KeyedDraws(13, keys))
    corrupted_alone = masking.corrupt(token_ids[1:2], alone == 0, KeyedDraws(13, keys[1:2]))
    assert torch.equal(corrupted_together[1:2], corrupted_alone)
    # Another epoch (key [1, 1, 7]) or another seed draws other masks.
    assert not torch.equal(together[1], masking.select(token_ids[2:3], 2, KeyedDraws(13, keys[2:3]))[0])
    assert not torch.equal(alone, masking.select(token_ids[1:2], 2, KeyedDraws(14, keys[1:2])))
    assert row_seed(13, [0, 1, 7]) == row_seed(13, [0, 1, 7]) != row_seed(13, [0, 7, 1])


def test_position_draws_mask_the_same_word_pieces_however_the_stream_is_cut(masking, large_batch):
    """Table 5's reading: windows of 20 and of 100 over one stream mask the same word-pieces, the same way."""
    stream = large_batch[:10].reshape(-1)  # 20,000 word-pieces, specials included
    positions = torch.arange(len(stream))

    def masks(length: int, epoch: int = 0):
        ids, where = stream.view(-1, length), positions.view(-1, length)
        draws = PositionDraws(7, torch.full((len(ids),), epoch), where)
        selection = masking.select(ids, 2, draws)
        corrupted = masking.corrupt(ids, selection == 0, draws)
        return selection.reshape(-1), corrupted.reshape(-1)

    (selection_20, corrupted_20), (selection_100, corrupted_100) = masks(20), masks(100)
    assert torch.equal(selection_20, selection_100) and torch.equal(corrupted_20, corrupted_100)
    selected = selection_20 == 0
    assert selected.sum() / masking.maskable(stream).sum() == pytest.approx(0.15, abs=0.01)
    assert ((selection_20 == 1) & masking.maskable(stream)).any()  # the second set, disjoint by construction
    replaced = corrupted_20[selected] != stream[selected]
    assert replaced.float().mean() == pytest.approx(0.9, abs=0.02)  # 80% [MASK] + 10% random (some equal)
    assert not torch.equal(masks(20, epoch=1)[0], selection_20)  # another epoch key, other masks
    with pytest.raises(ValueError, match="draws of shape"):
        PositionDraws(7, torch.zeros(2, dtype=torch.long), positions[:10].view(2, 5)).rand((2, 6))
