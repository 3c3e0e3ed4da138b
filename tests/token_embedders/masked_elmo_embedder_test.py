import pytest
import torch
from allennlp.common import Params
from allennlp.modules.token_embedders import TokenEmbedder


@pytest.fixture(scope="module")
def archive(masked_elmo_archive):
    """A tiny Masked ELMo trained for one epoch on the fixture corpus (tests/conftest.py)."""
    return masked_elmo_archive


def embedder(archive, **options):
    return TokenEmbedder.from_params(Params({"type": "maelmo_embedder", "archive_file": archive, **options}))


TOKEN_IDS = torch.tensor([[2, 6, 17, 3, 0, 0], [2, 22, 8, 9, 10, 3]])  # [CLS] ... [SEP], then padding


def test_output_is_the_scalar_mix_of_the_language_models_layers(archive):
    module = embedder(archive, dropout=0.0, scalar_mix_parameters=[0.0, 1.0, 2.0]).eval()
    mask = TOKEN_IDS != 0
    layers = module._language_model.representations(TOKEN_IDS, mask)
    weights = torch.softmax(torch.tensor([0.0, 1.0, 2.0]), 0)
    expected = sum(w * layer for w, layer in zip(weights, layers))
    torch.testing.assert_close(module(TOKEN_IDS), expected)
    assert module.get_output_dim() == 16 and module(TOKEN_IDS).shape == (2, 6, 16)


def test_frozen_language_model_gets_no_gradient_but_the_mix_does(archive):
    module = embedder(archive).train()
    module(TOKEN_IDS).sum().backward()
    assert all(p.grad is None for p in module._language_model.parameters())
    assert all(p.grad is not None for p in module._mixes.parameters())
    assert not module._language_model.training  # a frozen extractor runs without dropout


def test_fine_tuned_language_model_gets_gradients(archive):
    module = embedder(archive, requires_grad=True).train()
    module(TOKEN_IDS).sum().backward()
    assert module._language_model._embedding.weight.grad is not None


def test_two_output_representations_are_concatenated(archive):
    module = embedder(archive, num_output_representations=2, dropout=0.0).eval()
    output = module(TOKEN_IDS)
    assert module.get_output_dim() == 32 and output.shape == (2, 6, 32)
    torch.testing.assert_close(output[..., :16], output[..., 16:])  # both mixes start with equal weights


def test_padding_does_not_change_the_real_tokens(archive):
    module = embedder(archive, dropout=0.0).eval()
    alone = module(TOKEN_IDS[:1, :4])
    torch.testing.assert_close(module(TOKEN_IDS)[:1, :4], alone, atol=1e-5, rtol=1e-5)


def test_an_elmo_baseline_archive_embeds_too(elmo_lm_archive):
    module = embedder(elmo_lm_archive, dropout=0.0).eval()
    layers = module._language_model.representations(TOKEN_IDS, TOKEN_IDS != 0)
    assert module.get_output_dim() == layers[0].size(-1)
    torch.testing.assert_close(module(TOKEN_IDS), sum(layers) / len(layers))  # equal initial weights, gamma 1
