"""
`export_archive` / `allennlp maelmo-export` (docs/hf_export.md): the files of an export, and that
`transformers` 4.x and 5.x load it without AllenNLP or the plugin and compute what the plugin computes.

In this process the tests export the fixture archives and check the files (none a pickle), the config, the
weights and the model card, and the archives that are refused. Then `load_export.py` runs once per version in
a subprocess in which importing `allennlp` or `maelmo_plugin` fails: under the venv's transformers 4.x (4.43
on Python 3.11 and 3.12, 4.49 on 3.13 and 3.14) and under 5.x (`PYTHONPATH=.venv/transformers5`, which
`scripts/setup.sh` installs; the 5.x tests are skipped with that reason if it is missing). It loads the
exports with `AutoConfig`, `AutoTokenizer`, `AutoModel` and `AutoModelForMaskedLM`, runs the
`feature-extraction` and `fill-mask` pipelines, saves and reloads, and writes what it computed, which the
tests compare with the plugin's `maelmo_representations` and `maelmo_fill_mask` predictors:

* the L + 1 representations of a padded batch within 1e-5 of the plugin's, and each padded row within 1e-5
  of the row alone; a left-padded `attention_mask` refused;
* after `from_pretrained`, in each version, the decoder weight is the embedding's tensor (5.x would load an
  untied, random decoder from a `config.json` without `tie_word_embeddings`), and `save_pretrained` +
  `from_pretrained` gives identical logits; a label that is a special token is refused;
* the fill-mask pieces are the predictor's, their probabilities within 1e-5;
* under each `lstm_implementation`, "auto" and "cpu" give the values and gradients (relative to their
  largest entry) of torch's `nn.LSTM` within 1e-5 on a padded batch, without torch's oneDNN warning, which
  "torch" raises; an export whose `config.json` lacks `lstm_implementation` loads as "auto".

With `-s` they print the largest differences under each version:

    .venv/bin/python -m pytest tests/hf -s -k "representations or fill_mask" | grep "^transformers"
"""

import json
import os
import shutil
import tarfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy
import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor
from safetensors.torch import load_file

from maelmo_declarations.refusals import Refusal
from maelmo_plugin.common.integrity import ARCHIVE_MANIFEST
from maelmo_plugin.hf.export import _exportable_model, export_archive, hf_state_dict
from maelmo_plugin.lm.config_upgrade import upgrade_config
from maelmo_plugin.lm.modules.recurrence import standalone_source
from tests import FIXTURES_ROOT, PROJECT_ROOT, run_allennlp
from tests.hf import run_without_plugin

SENTENCES = ["The cat sleeps on the house.", "A dog eats a fish.", "The unbelievable king lived in Berlin."]
FILL_MASK_SENTENCE = "The king lived in [MASK]."
LOAD_EXPORT = Path(__file__).parent / "load_export.py"
VOCAB = FIXTURES_ROOT / "lm" / "vocab.txt"
EXPORT_FILES = {
    ".maelmo-output.json",
    "README.md",
    "config.json",
    "configuration_masked_elmo.py",
    "cpu_lstm_recurrence.py",
    "model.safetensors",
    "modeling_masked_elmo.py",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
}


@pytest.fixture(scope="module")
def exports(masked_elmo_export, fill_mask_archive, tmp_path_factory) -> dict[str, str]:
    return {
        "representations": masked_elmo_export,
        "fill_mask": export_archive(
            fill_mask_archive, str(tmp_path_factory.mktemp("hf_exports") / "fill_mask")
        ),
    }


@pytest.fixture(scope="module", params=["4", "5"])
def loaded(request, exports, tmp_path_factory) -> dict[str, Any]:
    """What `load_export.py` computed under transformers 4.x (the venv's) or 5.x (`TRANSFORMERS5`)."""
    work = tmp_path_factory.mktemp(f"transformers{request.param}")
    arguments = {**exports, "sentences": SENTENCES, "fill_mask_sentence": FILL_MASK_SENTENCE}
    return run_without_plugin(LOAD_EXPORT, arguments, request.param, work)


def test_an_export_holds_config_weights_code_and_tokenizer_and_no_pickle(exports, masked_elmo_archive):
    directory = Path(exports["representations"])
    assert {path.name for path in directory.iterdir()} == EXPORT_FILES
    config = json.loads((directory / "config.json").read_text())
    assert config["model_type"] == "masked_elmo" and config["architectures"] == ["MaskedElmoForMaskedLM"]
    assert config["auto_map"] == {
        "AutoConfig": "configuration_masked_elmo.MaskedElmoConfig",
        "AutoModel": "modeling_masked_elmo.MaskedElmoModel",
        "AutoModelForMaskedLM": "modeling_masked_elmo.MaskedElmoForMaskedLM",
        "AutoModelForSequenceClassification": "modeling_masked_elmo.MaskedElmoForSequenceClassification",
        "AutoModelForTokenClassification": "modeling_masked_elmo.MaskedElmoForTokenClassification",
    }
    # The fixture's sizes (tests/fixtures/lm/experiment.jsonnet) and vocabulary (ids 0-4 special).
    assert (config["hidden_size"], config["cell_size"], config["num_hidden_layers"]) == (16, 24, 2)
    assert config["vocab_size"] == 191 and config["hidden_dropout_prob"] == 0.0
    assert config["tie_word_embeddings"] is True  # 5.x reads a missing one as False
    assert [config[f"{name}_token_id"] for name in ("pad", "unk", "cls", "sep", "mask")] == [0, 1, 2, 3, 4]
    assert config["never_predicted_token_ids"] == [0, 1, 2, 3, 4]
    assert config["tokenizer_class"] == "BertTokenizer"
    for module in ("configuration_masked_elmo.py", "modeling_masked_elmo.py"):
        assert (directory / module).read_bytes() == (
            PROJECT_ROOT / "maelmo_plugin" / "hf" / module
        ).read_bytes()
    # The CPU recurrence's own files joined in one, not the plugin's hf/ module that imports it from the plugin.
    assert (directory / "cpu_lstm_recurrence.py").read_bytes() == standalone_source().encode("utf-8")
    assert config["lstm_implementation"] == "auto"
    tokenizer_config = json.loads((directory / "tokenizer_config.json").read_text())
    assert tokenizer_config["model_max_length"] >= 10**30  # an LSTM has no maximum length

    # The weights are the archive's, the tied decoder stored once (as the embedding).
    weights = load_file(str(directory / "model.safetensors"))
    expected = hf_state_dict(load_archive(masked_elmo_archive).model)
    assert "decoder.weight" not in weights
    assert weights.keys() == expected.keys() - {"decoder.weight"}
    assert all(torch.equal(weights[name], expected[name]) for name in weights)


def test_the_model_card_gives_sizes_data_and_usage(exports, masked_elmo_archive):
    card = (Path(exports["representations"]) / "README.md").read_text()
    assert "| hidden size d (embedding and every layer) | 16 |" in card
    assert "| LSTM cells per direction (projected to d / 2) | 24 |" in card
    assert "| training data | `tests/fixtures/lm/corpus.txt` |" in card
    # The fixture archive holds metrics.json (its config's include_in_archive) but no throughput.json.
    metrics = json.loads(tarfile.open(masked_elmo_archive).extractfile("metrics.json").read())
    assert f"| validation masked perplexity | {metrics['best_validation_perplexity']:.2f} |" in card
    assert "| updates | not recorded |" in card
    assert "AutoModel.from_pretrained(path, trust_remote_code=True)" in card
    assert "`AutoModelForSequenceClassification` (that mix, max" in card  # the task heads
    parameters = sum(
        tensor.numel()
        for tensor in load_file(str(Path(exports["representations"]) / "model.safetensors")).values()
    )
    assert f"| parameters (embedding and softmax tied, counted once) | {parameters:,} |" in card


def test_the_model_card_reports_the_archived_metrics_and_updates(masked_elmo_archive, tmp_path):
    archive = tmp_path / "model.tar.gz"
    metrics = {"best_epoch": 1, "best_validation_perplexity": 42.125, "validation_perplexity": 50.0}
    throughput = [{"epoch": 0, "updates": 10}, {"epoch": 1, "updates": 20}, {"epoch": 2, "updates": 30}]
    with tarfile.open(masked_elmo_archive) as original, tarfile.open(archive, "w:gz") as copy:
        for member in original.getmembers():
            if member.name != ARCHIVE_MANIFEST:  # the archive is changed: its list of sha256 goes
                copy.addfile(member, original.extractfile(member) if member.isfile() else None)
        for name, content in (("metrics.json", metrics), ("throughput.json", throughput)):
            (tmp_path / name).write_text(json.dumps(content))
            copy.add(tmp_path / name, arcname=name)
    card = (Path(export_archive(str(archive), str(tmp_path / "export"))) / "README.md").read_text()
    # The archived weights are the best epoch's: its perplexity, and the updates up to it.
    assert (
        "| validation masked perplexity | 42.12 |" in card
        or "| validation masked perplexity | 42.13 |" in card
    )
    assert "| updates | 20 |" in card


def plugin_representations(archive_file: str):
    predictor = Predictor.from_archive(load_archive(archive_file), "maelmo_representations")
    instances = predictor.sentence_instances(SENTENCES, [f"sentence {n}" for n in range(len(SENTENCES))])
    ids = [instance["sentence"].metadata.ids for instance in instances]
    return ids, predictor.vectors(instances)


def test_transformers_gives_the_plugins_representations(loaded, masked_elmo_archive):
    ids, vectors = plugin_representations(masked_elmo_archive)
    result = loaded["representations"]
    # Shape: (L + 1, batch_size, num_tokens, dim)
    hidden = numpy.array(result["hidden_states"])
    assert hidden.shape == (3, len(SENTENCES), max(map(len, ids)), 16)
    difference = 0.0
    for row, (row_ids, row_vectors) in enumerate(zip(ids, vectors)):
        length = len(row_ids)
        assert result["input_ids"][row][:length] == row_ids  # the same word-pieces, [CLS] and [SEP] included
        assert result["attention_mask"][row] == [1] * length + [0] * (hidden.shape[2] - length)
        difference = max(difference, float(numpy.abs(hidden[:, row, :length] - row_vectors).max()))
        assert not hidden[:, row, length:].any()  # every layer is zero at padding
    print(
        f"transformers {loaded['transformers_version']}: max |HF - plugin| over h_0..h_L = {difference:.2e}"
    )
    assert difference < 1e-5
    assert result["alone_max_difference"] < 1e-5  # a padded row gives the vectors of the row alone
    assert "right-padded" in result["left_padding_error"]
    # The feature-extraction pipeline gives h_L of the sentence alone.
    features = numpy.array(result["feature_extraction"][0])
    numpy.testing.assert_allclose(features, vectors[0][-1], atol=1e-5)
    assert result["config"] == {"model_type": "masked_elmo", "hidden_size": 16, "num_hidden_layers": 2}


def test_transformers_fill_mask_agrees_with_the_plugins_predictor(loaded, fill_mask_archive):
    result = loaded["masked_lm"]
    assert result["decoder_is_embedding"]  # tied after from_pretrained, not a random decoder
    assert result["resaved_max_difference"] == 0.0  # save_pretrained + from_pretrained changes nothing
    assert result["loss"] == pytest.approx(result["expected_loss"], rel=1e-5)
    assert "labels hold a special token" in result["special_label_error"]  # [SEP] is never a target
    predictor = Predictor.from_archive(load_archive(fill_mask_archive), "maelmo_fill_mask")
    (mask,) = predictor.predict_json({"sentence": FILL_MASK_SENTENCE})["masks"]
    assert [answer["wordpiece"] for answer in result["fill_mask"]] == mask["wordpieces"]
    assert mask["wordpieces"][0] == "Berlin"
    scores = numpy.array([answer["score"] for answer in result["fill_mask"]])
    difference = float(numpy.abs(scores - mask["probabilities"]).max())
    print(
        f"transformers {loaded['transformers_version']}: fill-mask {mask['wordpieces']} {scores.round(4)}, "
        f"max |HF - plugin| probability = {difference:.2e}"
    )
    assert difference < 1e-5


def test_the_export_runs_the_cpu_recurrence_on_a_cpu_with_torch_lstms_values_and_gradients(loaded):
    result = loaded["implementations"]
    print(
        f"transformers {loaded['transformers_version']}: max |ours - nn.LSTM| {result['max_difference']}, "
        f"gradients (relative to their largest entry) {result['max_relative_gradient_difference']}"
    )
    # "auto" on a CPU and "cpu": the representations and every gradient of torch's LSTM, on a padded batch.
    for implementation in ("auto", "cpu"):
        assert result["max_difference"][implementation] < 1e-5
        assert result["max_relative_gradient_difference"][implementation] < 1e-5
    onednn = {
        name: [text for text in caught if "oneDNN" in text] for name, caught in result["warnings"].items()
    }
    assert onednn["auto"] == [] and onednn["cpu"] == []  # no "LSTM with projections is not supported ..."
    assert onednn["torch"]  # torch's own LSTM gives it, so the check would see it
    # An export from before the option (no lstm_implementation in config.json) loads, as "auto".
    assert result["written"] == "auto" and result["without_field"] == "auto"
    assert result["without_field_max_difference"] < 1e-5


def test_an_elmo_baseline_archive_is_refused_with_the_alternatives(elmo_lm_archive, tmp_path):
    with pytest.raises(
        ConfigurationError, match="ELMo baseline.*Masked ELMo.*maelmo_representations.*maelmo-embed"
    ):
        export_archive(elmo_lm_archive, str(tmp_path / "export"))
    assert not (tmp_path / "export").exists()


def test_a_missing_archive_is_a_clear_error(tmp_path):
    with pytest.raises(Refusal, match="No such archive: .*nothing.tar.gz.*maelmo_masked_elmo_lm"):
        export_archive(str(tmp_path / "nothing.tar.gz"), str(tmp_path / "export"))


def test_a_previous_export_is_replaced_only_with_force(masked_elmo_archive, masked_elmo_export, tmp_path):
    output = tmp_path / "export"
    shutil.copytree(masked_elmo_export, output)
    (output / "model.safetensors").write_bytes(b"x" * (output / "model.safetensors").stat().st_size)
    with pytest.raises(Refusal, match="holds a previous output of maelmo-export.*--force"):
        export_archive(masked_elmo_archive, str(output))
    assert (output / "model.safetensors").read_bytes()[:1] == b"x"
    export_archive(masked_elmo_archive, str(output), force=True)
    assert {path.name for path in output.iterdir()} == EXPORT_FILES
    assert (output / "model.safetensors").read_bytes()[:1] != b"x"
    assert [path.name for path in tmp_path.iterdir()] == ["export"]  # no staging or previous directory left


def test_force_never_replaces_another_models_folder_or_a_card_the_user_edited(
    masked_elmo_archive, masked_elmo_export, tmp_path
):
    # Another model's Hugging Face folder: the names an export writes, but no manifest of maelmo-export.
    other = tmp_path / "bert-base-cased"
    shutil.copytree(masked_elmo_export, other)
    (other / ".maelmo-output.json").unlink()
    edited = tmp_path / "edited"
    shutil.copytree(masked_elmo_export, edited)
    (edited / "README.md").write_text("the user's own card, which the export did not write")
    for folder, message in ((other, "maelmo-export did not write"), (edited, "changed since.*README.md")):
        before = {path.name: path.read_bytes() for path in folder.iterdir()}
        with pytest.raises(Refusal, match=message):
            export_archive(masked_elmo_archive, str(folder), force=True)
        assert {path.name: path.read_bytes() for path in folder.iterdir()} == before


@pytest.mark.parametrize("output", [".", "folder"])
def test_force_never_removes_a_folder_it_did_not_write(masked_elmo_archive, tmp_path, monkeypatch, output):
    # The archive being exported, in the folder given as OUT_DIR (once emptied by --force, then not exported).
    folder = tmp_path / "folder"
    folder.mkdir()
    shutil.copy(masked_elmo_archive, folder / "model.tar.gz")
    (folder / "notes.txt").write_text("the user's notes")
    monkeypatch.chdir(folder if output == "." else tmp_path)
    with pytest.raises(Refusal, match="holds the working directory|holds the input"):
        export_archive(str(folder / "model.tar.gz"), output, force=True)
    assert sorted(os.listdir(folder)) == ["model.tar.gz", "notes.txt"]
    assert (folder / "notes.txt").read_text() == "the user's notes"


def test_the_manifest_lists_every_file_the_export_wrote(masked_elmo_export):
    manifest = json.loads((Path(masked_elmo_export) / ".maelmo-output.json").read_text())
    assert manifest["command"] == "maelmo-export"
    assert set(manifest["files"]) == EXPORT_FILES - {".maelmo-output.json"}


def test_the_command_line_exports(masked_elmo_archive, tmp_path):
    output = tmp_path / "export"
    result = run_allennlp(["maelmo-export", masked_elmo_archive, str(output)], {})
    assert f"Exported {masked_elmo_archive} to {output}" in result.stdout
    assert {path.name for path in output.iterdir()} == EXPORT_FILES


def test_a_glue_classifier_archive_is_refused_naming_the_language_model_to_export():
    archive = SimpleNamespace(model=None, config=Params({"model": {"type": "maelmo_glue_classifier"}}))
    with pytest.raises(ConfigurationError, match="glue.tar.gz holds a GLUE classifier.*export the pre-train"):
        _exportable_model(archive, "glue.tar.gz")


def test_a_masked_elmo_with_the_clipped_elmo_cell_is_refused():
    vocab = Vocabulary.from_params(Params({"type": "maelmo_wordpiece", "vocab": str(VOCAB)}))
    encoder = {"type": "maelmo_masked_elmo", "input_dim": 8, "cells": 12, "cell": "elmo"}
    model_params = {"type": "maelmo_masked_elmo_lm", "encoder": encoder}
    model = Model.from_params(vocab=vocab, params=Params(dict(model_params)))
    archive = SimpleNamespace(model=model, config=Params({"model": model_params}))
    with pytest.raises(ConfigurationError, match="model.encoder.cell 'elmo'.*only the fused cell"):
        _exportable_model(archive, "clipped.tar.gz")


def test_a_bert_archive_is_refused_by_the_masked_elmo_exports():
    """BERT* (here as a 0.1.0 config names it) is refused by name, not for its cell."""
    vocab = Vocabulary.from_params(Params({"type": "maelmo_wordpiece", "vocab": str(VOCAB)}))
    encoder = {"input_dim": 8, "num_layers": 1, "num_attention_heads": 2, "intermediate_dim": 16}
    model_params = {"type": "maelmo_bert_lm", "encoder": encoder}
    upgrade_config(model_params)  # as the archive's config.json is read
    model = Model.from_params(vocab=vocab, params=Params(dict(model_params)))
    archive = SimpleNamespace(model=model, config=Params({"model": model_params}))
    with pytest.raises(
        ConfigurationError, match=r"bert.tar.gz holds BERT\* \(a maelmo_transformer encoder\).*--format hf"
    ):
        _exportable_model(archive, "bert.tar.gz")
