"""BERT* exports as a standard BertForMaskedLM directory that transformers 4.x and 5.x load with their own code."""

from pathlib import Path

import pytest
import torch
from allennlp.models.archival import load_archive

from maelmo_plugin.hf.export import export_archive
from tests.hf import run_without_plugin

SENTENCES = ["The cat sleeps on the house.", "A dog eats a fish."]
LOAD = Path(__file__).parent / "load_bert_export.py"


@pytest.fixture(scope="module")
def export(bert_lm_archive, tmp_path_factory) -> str:
    return export_archive(bert_lm_archive, str(tmp_path_factory.mktemp("bert_export") / "hf"))


def test_the_export_is_a_plain_bert_directory_without_code_or_pickles(export):
    names = {path.name for path in Path(export).iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "README.md"} <= names
    assert not any(name.endswith((".py", ".bin", ".pt", ".th", ".pkl")) for name in names)


@pytest.mark.parametrize("major", ["4", "5"])
def test_transformers_computes_the_plugins_logits(major, export, bert_lm_archive, tmp_path):
    loaded = run_without_plugin(LOAD, {"export": export, "sentences": SENTENCES}, major, tmp_path)
    assert loaded["class"] == "BertForMaskedLM"
    model = load_archive(bert_lm_archive).model.eval()
    ids = torch.tensor(loaded["input_ids"])
    mask = ids != 0
    with torch.no_grad():
        expected = model._output_logits(model.representations(ids, mask)[-1])
    actual = torch.tensor(loaded["logits"])
    torch.testing.assert_close(actual[mask], expected[mask], rtol=0, atol=1e-4)
