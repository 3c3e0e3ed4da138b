from pathlib import Path

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.modules.token_embedders import TokenEmbedder

from tests import FIXTURES_ROOT

VOCAB = str(FIXTURES_ROOT / "lm" / "vocab.txt")


@pytest.fixture(scope="module")
def archive(masked_elmo_archive):
    """A tiny Masked ELMo trained for one epoch on the fixture corpus (tests/conftest.py)."""
    return masked_elmo_archive


def embedder(archive, **options):
    return TokenEmbedder.from_params(
        Params({"type": "maelmo_masked_elmo_embedder", "archive_file": archive, **options})
    )


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


def test_reinitialize_keeps_the_architecture_but_draws_new_weights(archive):
    trained = embedder(archive)._language_model.state_dict()
    torch.manual_seed(1)
    random_a = embedder(archive, reinitialize=True)._language_model.state_dict()
    torch.manual_seed(1)
    random_b = embedder(archive, reinitialize=True)._language_model.state_dict()
    assert random_a.keys() == trained.keys()
    assert all(random_a[name].shape == trained[name].shape for name in trained)
    embedding = next(name for name in trained if "embedding" in name)
    assert not torch.equal(random_a[embedding], trained[embedding])
    for name in trained:  # the random encoder is the seed's, not an accident of load order
        torch.testing.assert_close(random_a[name], random_b[name])


def test_loads_an_archive_whose_pretraining_reader_paths_no_longer_resolve(archive, tmp_path):
    # Pre-training configs hold the vocab.txt path as given, often relative to where training ran.
    import json
    import tarfile

    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "archive")
    config_path = tmp_path / "archive" / "config.json"
    config = json.loads(config_path.read_text())
    config["dataset_reader"]["tokenizer"]["vocab"] = "moved/away/vocab.txt"
    config_path.write_text(json.dumps(config))
    moved = embedder(str(tmp_path / "archive"), dropout=0.0).eval()
    torch.testing.assert_close(moved(TOKEN_IDS), embedder(archive, dropout=0.0).eval()(TOKEN_IDS))


def test_the_archives_own_vocabulary_passes_the_check(archive):
    checked = embedder(archive, dropout=0.0, tokenizer_vocab=VOCAB).eval()
    torch.testing.assert_close(checked(TOKEN_IDS), embedder(archive, dropout=0.0).eval()(TOKEN_IDS))


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda lines: lines[:6] + [lines[7], lines[6]] + lines[8:],
            r"at id 6, the archive has 'a' and the vocabulary 'an'",
        ),  # noqa: E501
        (
            lambda lines: lines + ["zebra"],
            r"at id 191, the archive has '\(none: the vocabulary ends\)' and the vocabulary 'zebra'",
        ),  # noqa: E501
    ],
)
def test_another_vocabulary_is_a_configuration_error_naming_both_files_and_the_first_difference(
    archive, tmp_path, edit, message
):
    other = tmp_path / "other_vocab.txt"
    lines = Path(VOCAB).read_text(encoding="utf-8").splitlines()
    other.write_text("\n".join(edit(lines)) + "\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=message) as error:
        embedder(archive, tokenizer_vocab=str(other))
    assert str(other) in str(error.value) and archive in str(error.value)
    assert "Set MAELMO_VOCAB" in str(error.value)


def test_a_token_id_past_the_language_models_vocabulary_is_reported(archive):
    module = embedder(archive)
    message = r"Token id 191 is outside the language model's vocabulary of 191"
    with pytest.raises(ConfigurationError, match=message):
        module(torch.tensor([[2, 191, 3]]))


def test_a_corrupt_archive_is_a_configuration_error_naming_it(archive, tmp_path):
    truncated = tmp_path / "model.tar.gz"
    data = Path(archive).read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ConfigurationError, match=r"model\.tar\.gz is corrupt or truncated"):
        embedder(str(truncated))
