"""
With the plugin imported, transformers' Auto factories know the export's classes without trust_remote_code, so
AllenNLP's own transformer embedders read an export, also on their load_weights: false path.
"""

from pathlib import Path

import torch
from allennlp.modules.token_embedders import (
    PretrainedTransformerEmbedder,
    PretrainedTransformerMismatchedEmbedder,
)
from transformers import AutoConfig, AutoModel, AutoModelForTokenClassification

from maelmo_plugin.hf.modeling_masked_elmo import MaskedElmoForTokenClassification, MaskedElmoModel


def test_the_auto_factories_build_a_masked_elmo_from_its_config(masked_elmo_export):
    config = AutoConfig.from_pretrained(masked_elmo_export)  # no trust_remote_code
    assert isinstance(AutoModel.from_config(config), MaskedElmoModel)
    tagger = AutoModelForTokenClassification.from_config(config)
    assert isinstance(tagger, MaskedElmoForTokenClassification)


def test_allennlps_transformer_embedders_read_an_export(masked_elmo_export):
    ids = torch.tensor([[2, 95, 39, 68, 11, 109, 3]])
    mask = torch.ones_like(ids, dtype=torch.bool)
    expected = (
        AutoModel.from_pretrained(masked_elmo_export)
        .eval()(input_ids=ids, attention_mask=mask)
        .last_hidden_state
    )
    embedder = PretrainedTransformerEmbedder(masked_elmo_export).eval()
    with torch.no_grad():
        torch.testing.assert_close(embedder(ids, mask), expected)
    # At archive load AllenNLP builds the model from its config alone, then loads the archive's weights.
    unloaded = PretrainedTransformerMismatchedEmbedder(masked_elmo_export, load_weights=False)
    assert isinstance(unloaded._matched_embedder.transformer_model, MaskedElmoModel)
    assert unloaded.get_output_dim() == 16


def test_a_model_saved_with_the_plugin_imported_carries_the_module_files(masked_elmo_export, tmp_path):
    # The plugin's classes register themselves for their auto class, as the export's do: the module files
    # come along, the CPU recurrence as the plugin's module that imports it from the plugin (hf_export.md).
    AutoModelForTokenClassification.from_pretrained(masked_elmo_export, num_labels=3).save_pretrained(
        tmp_path
    )
    modules = ("configuration_masked_elmo.py", "modeling_masked_elmo.py")
    assert sorted(path.name for path in tmp_path.glob("*.py")) == sorted(
        modules + ("cpu_lstm_recurrence.py",)
    )
    for module in modules:
        assert (tmp_path / module).read_bytes() == (Path(masked_elmo_export) / module).read_bytes()
    recurrence = (tmp_path / "cpu_lstm_recurrence.py").read_text()
    assert "from maelmo_plugin.lm.modules.recurrence.cpu import" in recurrence
