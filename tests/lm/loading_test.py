"""
And back: a Hugging Face export plugs in wherever a model.tar.gz does (the `maelmo_masked_elmo_embedder`, so the GLUE
protocol; `maelmo_plugin.api`; `allennlp maelmo-embed`), and gives the archive's outputs.
"""

import json
import shutil

import numpy as np
import pytest
import torch
from allennlp.commands.train import train_model_from_file
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive
from safetensors.torch import load_file, save_file

from maelmo_plugin.api import MaskedElmo
from maelmo_plugin.hf.export import export_archive
from maelmo_plugin.lm.loading import is_export, load_export
from maelmo_plugin.lm.token_embedders.masked_elmo_embedder import MaskedElmoTokenEmbedder
from tests import FIXTURES_ROOT

SENTENCES = ["The quick brown fox jumps over the lazy dog.", "A cat sleeps.", "The king lived in Berlin."]


@pytest.fixture(scope="module")
def export(fill_mask_archive, tmp_path_factory) -> str:
    return export_archive(fill_mask_archive, str(tmp_path_factory.mktemp("export") / "masked-elmo"))


def test_an_export_loads_as_the_archives_model(fill_mask_archive, export):
    assert is_export(export) and not is_export(fill_mask_archive)
    archived = load_archive(fill_mask_archive).model
    model, params = load_export(export)
    assert params.as_dict()["type"] == "maelmo_masked_elmo_lm"
    assert model.state_dict().keys() == archived.state_dict().keys()
    for name, tensor in archived.state_dict().items():
        assert torch.equal(model.state_dict()[name], tensor), name
    assert model.vocab.get_token_to_index_vocabulary(
        "wordpieces"
    ) == archived.vocab.get_token_to_index_vocabulary("wordpieces")


def test_the_api_gives_the_archives_vectors_and_fills(fill_mask_archive, export):
    from_archive, from_export = MaskedElmo.from_archive(fill_mask_archive), MaskedElmo.from_archive(export)
    for expected, actual in zip(from_archive.embed(SENTENCES), from_export.embed(SENTENCES)):
        np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-6)
    filled = from_export.fill_mask("The king lived in [MASK].", top_k=3)
    assert filled == from_archive.fill_mask("The king lived in [MASK].", top_k=3)
    assert filled["masks"][0]["wordpieces"][0] == "Berlin"


def test_the_embedder_reads_an_export(fill_mask_archive, export):
    ids = torch.tensor([[2, 10, 11, 12, 3], [2, 13, 3, 0, 0]])
    vocab = str(FIXTURES_ROOT / "lm" / "vocab.txt")
    outputs = []
    for source in (fill_mask_archive, export):
        torch.manual_seed(0)  # the scalar mix and its dropout start alike
        embedder = MaskedElmoTokenEmbedder(source, tokenizer_vocab=vocab).eval()
        with torch.no_grad():
            outputs.append(embedder(ids))
    torch.testing.assert_close(outputs[1], outputs[0], rtol=0, atol=1e-6)


def test_fine_tuning_from_an_export_starts_with_the_archives_loss(masked_elmo_archive, tmp_path, monkeypatch):
    """The GLUE protocol on the same language model as an archive and as an export: the same first update."""
    export = export_archive(masked_elmo_archive, str(tmp_path / "hf"))
    losses = {}
    for name, source in (("archive", masked_elmo_archive), ("export", export)):
        monkeypatch.setenv("MAELMO_LM_ARCHIVE", source)
        run = tmp_path / f"glue_from_{name}"
        overrides = {
            "trainer.num_epochs": 1,
            "data_loader.batches_per_epoch": 1,
            "validation_data_path": None,
        }
        train_model_from_file(
            str(FIXTURES_ROOT / "glue_models" / "cola.jsonnet"), str(run), json.dumps(overrides)
        )
        losses[name] = json.loads((run / "metrics.json").read_text())["training_loss"]
        weights = torch.load(run / "best.th")
        losses[f"{name} weights"] = weights
    assert losses["export"] == pytest.approx(losses["archive"], rel=0, abs=1e-6)
    for name, tensor in losses["archive weights"].items():  # and the same update
        torch.testing.assert_close(losses["export weights"][name], tensor, rtol=0, atol=1e-6)


def test_a_base_model_save_loads_without_the_decoder(export, tmp_path):
    base = tmp_path / "base"
    shutil.copytree(export, base)
    state = load_file(str(base / "model.safetensors"))
    save_file(
        {
            name.removeprefix("masked_elmo."): tensor
            for name, tensor in state.items()
            if name.startswith("masked_elmo.")
        },
        str(base / "model.safetensors"),
    )
    model, _ = load_export(str(base))
    assert not model._output_bias.any()
    full, _ = load_export(export)
    assert torch.equal(model._embedding.weight, full._embedding.weight)


def test_an_export_of_other_sizes_is_refused(export, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(export, broken)
    config = json.loads((broken / "config.json").read_text())
    config["num_hidden_layers"] += 1
    (broken / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConfigurationError, match="missing tensors"):
        load_export(str(broken))
    (broken / "model.safetensors").unlink()
    with pytest.raises(ConfigurationError, match="no model.safetensors"):
        load_export(str(broken))


def test_a_fine_tuned_task_model_loads_as_its_encoder(export, tmp_path):
    """A head saved after Trainer (its encoder fine-tuned) serves the plugin: the head is left out."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    tagger = AutoModelForTokenClassification.from_pretrained(export, num_labels=3)
    with torch.no_grad():  # a fine-tuned encoder: its weights differ from the export's
        tagger.masked_elmo.embeddings.weight.add_(0.5)
    tagger.save_pretrained(tmp_path / "tagger")
    AutoTokenizer.from_pretrained(export).save_pretrained(tmp_path / "tagger")
    model, _ = load_export(str(tmp_path / "tagger"))
    exported, _ = load_export(export)
    assert torch.equal(model._embedding.weight, exported._embedding.weight + 0.5)
    assert not model._output_bias.any()  # a task model has no masked-LM decoder
