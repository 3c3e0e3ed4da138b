"""
`allennlp maelmo-export --sentence-transformers` (docs/sentence_vectors.md): the export also loads as a
`SentenceTransformer` under sentence-transformers 6.x and transformers 5.x, without AllenNLP or the plugin,
and encodes sentences into the plugin's own sentence vectors (`pool="sentence"`).

`encode_sentences.py` runs in a subprocess with `PYTHONPATH=.venv/transformers5` (where `scripts/setup.sh`
installs both; the tests are skipped with that reason if sentence-transformers is missing) and `allennlp` and
`maelmo_plugin` blocked, on a `--sentence-transformers` export of the fixture archive. Its
`SentenceTransformer(path).encode(...)` must equal the plugin's `embed(..., layer=..., pool="sentence")`
within 1e-5 for four sentences of 6 to 562 word-pieces (past BERT's 512: nothing truncated), batched
(padded) and one at a time, for the default layer and for `--sentence-layer` 0, 1 and `mix`. With `-s` they
print the largest difference (4.8e-07 under sentence-transformers 6.2.0 and transformers 5.23.0):

    .venv/bin/python -m pytest tests/hf/sentence_transformers_test.py -s -k plugin
"""

import json
import os
import re
from pathlib import Path
from typing import Any

import numpy
import pytest
from allennlp.common.checks import ConfigurationError

from maelmo_plugin.api import MaskedElmo
from maelmo_plugin.hf.export import export_archive
from tests import PROJECT_ROOT, run_allennlp_in_process
from tests.hf import TRANSFORMERS5, run_without_plugin

ENCODE_SENTENCES = Path(__file__).parent / "encode_sentences.py"
RUN_DOC_SNIPPET = Path(__file__).parent / "run_doc_snippet.py"
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


def export_with_layer(archive: str, tmp_path_factory, layer) -> str:
    directory = tmp_path_factory.mktemp("sentence_transformers") / "masked_elmo"
    return export_archive(archive, str(directory), sentence_transformers=True, sentence_layer=layer)


def encode(export: str, tmp_path_factory) -> dict[str, Any]:
    """What `encode_sentences.py` computed on `export` under sentence-transformers 6.x and transformers 5.x."""
    if not (TRANSFORMERS5 / "sentence_transformers").is_dir():
        pytest.skip(f"sentence-transformers is not installed in {TRANSFORMERS5}: run scripts/setup.sh")
    work = tmp_path_factory.mktemp("sentence_transformers_run")
    return run_without_plugin(ENCODE_SENTENCES, {"export": export, "sentences": SENTENCES}, "5", work)


@pytest.fixture(scope="module")
def export(masked_elmo_archive, tmp_path_factory) -> str:
    return export_with_layer(masked_elmo_archive, tmp_path_factory, -1)


@pytest.fixture(scope="module")
def encoded(export, tmp_path_factory) -> dict[str, Any]:
    return encode(export, tmp_path_factory)


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


def test_the_docs_snippet_runs_where_the_docs_say(export, tmp_path):
    """docs/sentence_vectors.md's sentence-transformers block, as written, under transformers 5.x with
    sentence-transformers (the serving environment it names), on the fixture export."""
    doc = (PROJECT_ROOT / "docs" / "sentence_vectors.md").read_text(encoding="utf-8")
    (block,) = re.findall(
        r"```python\n(from sentence_transformers import SentenceTransformer\n.*?)```", doc, re.DOTALL
    )
    assert 'SentenceTransformer("runs/sample/hf", trust_remote_code=True)' in block
    if not (TRANSFORMERS5 / "sentence_transformers").is_dir():
        pytest.skip(f"sentence-transformers is not installed in {TRANSFORMERS5}: run scripts/setup.sh")
    code = block.replace("runs/sample/hf", export)
    output = run_without_plugin(RUN_DOC_SNIPPET, {"code": code}, "5", tmp_path)
    assert output["shape"] == [2, 16]
    assert numpy.diag(output["similarity"]) == pytest.approx([1.0, 1.0], abs=1e-5)  # cosine


def assert_encoded_as_the_plugin(encoded: dict[str, Any], archive: str, layer) -> None:
    elmo = MaskedElmo.from_archive(archive)
    expected = numpy.stack(elmo.embed(SENTENCES, layer=layer, pool="sentence"))
    pieces = [vectors.shape[0] for vectors in elmo.embed(SENTENCES, layer=-1)]
    assert encoded["num_pieces"] == pieces and pieces[-1] > 512  # [CLS] ... [SEP], nothing truncated
    for name in ("vectors", "alone"):  # batched (padded) and one sentence at a time
        difference = float(numpy.abs(numpy.array(encoded[name]) - expected).max())
        print(
            f"sentence-transformers {encoded['sentence_transformers_version']}, transformers "
            f"{encoded['transformers_version']}, layer {layer}: max |SentenceTransformer.encode - plugin| "
            f"({name}) {difference:.1e}"
        )
        assert difference <= 1e-5


def test_encode_gives_the_plugins_sentence_vectors(encoded, masked_elmo_archive):
    assert_encoded_as_the_plugin(encoded, masked_elmo_archive, -1)


@pytest.mark.parametrize("layer", [0, 1, "mix"])
def test_another_sentence_layer_gives_the_plugins_vectors_of_that_layer(
    layer, masked_elmo_archive, tmp_path_factory
):
    export = export_with_layer(masked_elmo_archive, tmp_path_factory, layer)
    modules = json.loads((Path(export) / "modules.json").read_text())
    assert [(module["path"], module["type"].rsplit(".", 1)[1]) for module in modules] == [
        ("", "Transformer"),
        ("1_WeightedLayerPooling", "WeightedLayerPooling"),
        ("2_Pooling", "Pooling"),
    ]
    encoded = encode(export, tmp_path_factory)
    assert encoded["modules"] == ["Transformer", "WeightedLayerPooling", "Pooling"]
    assert_encoded_as_the_plugin(encoded, masked_elmo_archive, layer)
    card = (Path(export) / "README.md").read_text()
    expected = {0: "the embedding layer h_0", 1: "layer h_1", "mix": "the mean of the 3 layers h_0 ... h_2"}
    assert f"a sentence's vector is the mean of\n{expected[layer]} over its word-pieces" in card


def test_the_top_layer_by_its_index_is_the_default_layout(masked_elmo_archive, tmp_path):
    export = export_archive(
        masked_elmo_archive, str(tmp_path / "e"), sentence_transformers=True, sentence_layer=2
    )
    assert [module["path"] for module in json.loads((Path(export) / "modules.json").read_text())] == [
        "",
        "1_Pooling",
    ]


@pytest.mark.parametrize("layer", [3, -4, "top", 1.0])
def test_a_layer_the_model_lacks_is_refused_naming_the_choices(layer, masked_elmo_archive, tmp_path):
    message = r"sentence layer must be an integer from -3 to 2 \(0: the embeddings, -1: the top layer h_2\) or 'mix'"
    with pytest.raises(ConfigurationError, match=message):
        export_archive(
            masked_elmo_archive, str(tmp_path / "e"), sentence_transformers=True, sentence_layer=layer
        )
    assert not (tmp_path / "e").exists()


class TestTheCommandLine:
    def run_cli(self, *args: str) -> None:
        run_allennlp_in_process("maelmo-export", *args)

    def test_the_flag_writes_the_files(self, masked_elmo_archive, tmp_path, capsys):
        output = tmp_path / "export"
        self.run_cli(masked_elmo_archive, str(output), "--sentence-transformers")
        assert (
            "(load with transformers or SentenceTransformer, trust_remote_code=True)"
            in capsys.readouterr().out
        )
        assert SENTENCE_TRANSFORMERS_FILES <= {path.name for path in output.iterdir()}

    def test_the_layer_option_writes_that_layers_files(self, masked_elmo_archive, tmp_path, capsys):
        output = tmp_path / "export"
        self.run_cli(masked_elmo_archive, str(output), "--sentence-transformers", "--sentence-layer", "0")
        weights = json.loads((output / "1_WeightedLayerPooling" / "config.json").read_text())
        assert (weights["layer_start"], weights["num_hidden_layers"]) == (0, 2)

    def test_the_layer_option_needs_the_flag(self, masked_elmo_archive, tmp_path, capsys):
        with pytest.raises(SystemExit):
            self.run_cli(masked_elmo_archive, str(tmp_path / "out"), "--sentence-layer", "0")
        assert "--sentence-layer goes with --sentence-transformers" in capsys.readouterr().err
        assert not (tmp_path / "out").exists()

    def test_the_flag_is_refused_with_onnx(self, masked_elmo_archive, tmp_path, capsys):
        with pytest.raises(SystemExit):
            self.run_cli(
                masked_elmo_archive, str(tmp_path / "out"), "--format", "onnx", "--sentence-transformers"
            )
        assert "--sentence-transformers goes with --format hf" in capsys.readouterr().err
        assert not (tmp_path / "out").exists()


def test_a_bert_archive_is_refused(bert_lm_archive, tmp_path):
    with pytest.raises(
        ConfigurationError, match=r"BERT\* \(a maelmo_transformer encoder\).*Masked ELMo exports only"
    ):
        export_archive(bert_lm_archive, str(tmp_path / "bert"), sentence_transformers=True)
    assert not (tmp_path / "bert").exists()
