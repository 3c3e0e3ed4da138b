"""
`allennlp maelmo-export --sentence-transformers`: the export also loads as a `SentenceTransformer` under
sentence-transformers 6.x and transformers 5.x, without AllenNLP or the plugin (`encode_sentences.py`, in a
subprocess), and encodes sentences into the plugin's own sentence vectors (`pool="sentence"`, top layer).
"""

import json
import os
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import numpy
import pytest
from allennlp.commands import main
from allennlp.common.checks import ConfigurationError

from maelmo_plugin.api import MaskedElmo
from maelmo_plugin.hf.export import export_archive
from tests.hf import TRANSFORMERS5, run_without_plugin

ENCODE_SENTENCES = Path(__file__).parent / "encode_sentences.py"
# Of different lengths, the last over 512 word-pieces: nothing is truncated at BERT's maximum.
SENTENCES = [
    "A cat sleeps.",
    "The quick brown fox jumps over the lazy dog near the river.",
    "The unbelievable king lived in Berlin.",
    " ".join(["The cat sleeps on the house."] * 80),
]
SENTENCE_TRANSFORMERS_FILES = {
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "1_Pooling",
}


@pytest.fixture(scope="module")
def export(masked_elmo_archive, tmp_path_factory) -> str:
    directory = tmp_path_factory.mktemp("sentence_transformers") / "masked_elmo"
    return export_archive(masked_elmo_archive, str(directory), sentence_transformers=True)


@pytest.fixture(scope="module")
def encoded(export, tmp_path_factory) -> dict[str, Any]:
    """What `encode_sentences.py` computed under sentence-transformers 6.x and transformers 5.x."""
    if not (TRANSFORMERS5 / "sentence_transformers").is_dir():
        pytest.skip(f"sentence-transformers is not installed in {TRANSFORMERS5}: run scripts/setup.sh")
    work = tmp_path_factory.mktemp("sentence_transformers_run")
    return run_without_plugin(ENCODE_SENTENCES, {"export": export, "sentences": SENTENCES}, "5", work)


def test_the_export_holds_the_sentence_transformers_files(export):
    directory = Path(export)
    assert SENTENCE_TRANSFORMERS_FILES <= {path.name for path in directory.iterdir()}
    modules = json.loads((directory / "modules.json").read_text())
    assert [(module["path"], module["type"]) for module in modules] == [
        ("", "sentence_transformers.models.Transformer"),  # the export itself, loaded by transformers
        ("1_Pooling", "sentence_transformers.models.Pooling"),
    ]
    pooling = json.loads((directory / "1_Pooling" / "config.json").read_text())
    assert pooling["word_embedding_dimension"] == 16 and pooling["pooling_mode_mean_tokens"] is True
    assert not any(
        value for key, value in pooling.items() if key.startswith("pooling_mode_") and "mean_" not in key
    )
    assert json.loads((directory / "sentence_bert_config.json").read_text())["max_seq_length"] is None
    assert os.access(directory / "1_Pooling" / "config.json", os.R_OK)
    card = (directory / "README.md").read_text()
    assert "- sentence-transformers" in card and 'SentenceTransformer("path/to/this/directory"' in card


def test_sentence_transformers_loads_the_export_as_a_transformer_and_mean_pooling(encoded):
    assert encoded["sentence_transformers_version"].startswith("6.")
    assert encoded["modules"] == ["Transformer", "Pooling"]
    assert encoded["pooling"]["pooling_mode"] == "mean" and encoded["dimension"] == 16
    assert encoded["similarity"] == "cosine"
    assert encoded["cosine_of_first_two"] == pytest.approx(encoded["expected_cosine"], abs=1e-6)


def test_encode_gives_the_plugins_sentence_vectors(encoded, masked_elmo_archive):
    elmo = MaskedElmo.from_archive(masked_elmo_archive)
    expected = numpy.stack(elmo.embed(SENTENCES, layer=-1, pool="sentence"))
    pieces = [vectors.shape[0] for vectors in elmo.embed(SENTENCES, layer=-1)]
    assert encoded["num_pieces"] == pieces and pieces[-1] > 512  # [CLS] ... [SEP], nothing truncated
    for name in ("vectors", "alone"):  # batched (padded) and one sentence at a time
        difference = float(numpy.abs(numpy.array(encoded[name]) - expected).max())
        print(
            f"sentence-transformers {encoded['sentence_transformers_version']}, transformers "
            f"{encoded['transformers_version']}: max |SentenceTransformer.encode - plugin| ({name}) {difference:.1e}"
        )
        assert difference <= 1e-5


class TestTheCommandLine:
    def run_cli(self, *args: str) -> None:
        with mock.patch.object(sys, "argv", ["allennlp", "maelmo-export", *args]):
            main(prog="allennlp")

    def test_the_flag_writes_the_files(self, masked_elmo_archive, tmp_path, capsys):
        output = tmp_path / "export"
        self.run_cli(masked_elmo_archive, str(output), "--sentence-transformers")
        assert (
            "(load with transformers or SentenceTransformer, trust_remote_code=True)"
            in capsys.readouterr().out
        )
        assert SENTENCE_TRANSFORMERS_FILES <= {path.name for path in output.iterdir()}

    def test_the_flag_is_refused_with_onnx(self, masked_elmo_archive, tmp_path, capsys):
        with pytest.raises(SystemExit):
            self.run_cli(
                masked_elmo_archive, str(tmp_path / "out"), "--format", "onnx", "--sentence-transformers"
            )
        assert "--sentence-transformers goes with --format hf" in capsys.readouterr().err
        assert not (tmp_path / "out").exists()


def test_a_bert_archive_is_refused(bert_lm_archive, tmp_path):
    with pytest.raises(ConfigurationError, match=r"BERT\* \(maelmo_bert_lm\).*Masked ELMo exports only"):
        export_archive(bert_lm_archive, str(tmp_path / "bert"), sentence_transformers=True)
    assert not (tmp_path / "bert").exists()
