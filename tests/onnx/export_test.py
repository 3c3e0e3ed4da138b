"""
`export_onnx_archive` / `allennlp maelmo-export --format onnx`: the files and the graph's interface, and that
ONNX Runtime computes what the plugin computes, on padded batches and without torch.

Needs the `onnx` extra (`pip install '.[onnx]'`; scripts/setup.sh installs it): skipped without it.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive

from maelmo_declarations.refusals import Refusal
from maelmo_plugin.onnx import export as onnx_export
from tests import FIXTURES_ROOT, PROJECT_ROOT, run_allennlp, run_allennlp_in_process

REASON = "the ONNX export needs the onnx extra: pip install '.[onnx]' (scripts/setup.sh installs it)"
onnx = pytest.importorskip("onnx", reason=REASON)
pytest.importorskip("onnxscript", reason=REASON)
onnxruntime = pytest.importorskip("onnxruntime", reason=REASON)
from tokenizers import Tokenizer  # noqa: E402  after the skips

DOCS_PAGE = PROJECT_ROOT / "docs" / "onnx.md"
RUN_DOCS_SCRIPT = Path(__file__).parent / "run_docs_script.py"
EXPORT_FILES = {
    ".maelmo-output.json",
    "model.onnx",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
}


@pytest.fixture(scope="module")
def export_dir(masked_elmo_archive, tmp_path_factory) -> str:
    """The fixture archive exported on the command line, as a user does it."""
    output = tmp_path_factory.mktemp("onnx_export") / "onnx"
    result = run_allennlp(["maelmo-export", masked_elmo_archive, str(output), "--format", "onnx"], {})
    assert "run model.onnx with onnxruntime" in result.stdout
    return str(output)


@pytest.fixture(scope="module")
def plugin_model(masked_elmo_archive):
    return load_archive(masked_elmo_archive).model.eval()


def _sentences():
    """The fixture corpus's sentences: 2 to 20 word-pieces, so every batch mixes lengths."""
    text = (FIXTURES_ROOT / "lm" / "corpus.txt").read_text()
    sentences = [sentence.strip() for line in text.splitlines() for sentence in line.split(".")]
    return [sentence + "." for sentence in sentences if sentence]


def _encode(export_dir, sentences):
    """(input_ids, attention_mask) as the exported tokenizer pads them, int64."""
    encodings = Tokenizer.from_file(os.path.join(export_dir, "tokenizer.json")).encode_batch(sentences)
    ids = numpy.array([encoding.ids for encoding in encodings], dtype=numpy.int64)
    mask = numpy.array([encoding.attention_mask for encoding in encodings], dtype=numpy.int64)
    return ids, mask


def _plugin_hidden_states(model, ids, mask) -> numpy.ndarray:
    with torch.no_grad():
        layers = model.representations(torch.from_numpy(ids), torch.from_numpy(mask).bool())
    return torch.stack(layers).numpy()


def test_an_export_holds_the_model_and_the_tokenizer_with_the_hf_interface(export_dir):
    assert set(os.listdir(export_dir)) == EXPORT_FILES
    model = onnx.load(os.path.join(export_dir, "model.onnx"))
    onnx.checker.check_model(model)
    assert max(opset.version for opset in model.opset_import if opset.domain in ("", "ai.onnx")) >= 17

    def interface(values):
        return [
            (
                value.name,
                value.type.tensor_type.elem_type,
                [dim.dim_param or dim.dim_value for dim in value.type.tensor_type.shape.dim],
            )
            for value in values
        ]

    int64, float32 = onnx.TensorProto.INT64, onnx.TensorProto.FLOAT
    assert interface(model.graph.input) == [
        ("input_ids", int64, ["batch", "tokens"]),
        ("attention_mask", int64, ["batch", "tokens"]),
    ]
    # The fixture's L = 2 layers of d = 16 (tests/fixtures/lm/experiment.jsonnet).
    assert interface(model.graph.output) == [("hidden_states", float32, [3, "batch", "tokens", 16])]
    # The tokenizer pads on its own, to the right, with [PAD] (id 0 in the fixture vocabulary).
    padding = json.loads(Path(export_dir, "tokenizer.json").read_text())["padding"]
    assert (padding["direction"], padding["pad_id"], padding["pad_token"]) == ("Right", 0, "[PAD]")
    assert json.loads(Path(export_dir, "tokenizer_config.json").read_text())["model_max_length"] >= 10**30


def test_onnx_runtime_gives_the_plugins_representations_of_padded_batches(export_dir, plugin_model):
    session = onnx_export.onnx_session(export_dir)
    sentences = _sentences()
    padded_rows = 0
    for start in range(0, len(sentences), 4):
        ids, mask = _encode(export_dir, sentences[start : start + 4])
        padded_rows += int((mask == 0).any(axis=1).sum())
        (actual,) = session.run(None, {"input_ids": ids, "attention_mask": mask})
        expected = _plugin_hidden_states(plugin_model, ids, mask)
        assert actual.shape == expected.shape == (3, *ids.shape, 16)
        assert float(numpy.abs(actual - expected).max()) <= 1e-5
    assert padded_rows >= len(sentences) // 2


def test_a_padded_row_gives_the_vectors_of_the_row_alone_and_zeros_at_padding(export_dir):
    session = onnx_export.onnx_session(export_dir)
    sentences = _sentences()[:6]
    ids, mask = _encode(export_dir, sentences)
    lengths = mask.sum(axis=1)
    assert len(set(lengths.tolist())) > 2
    (batch,) = session.run(None, {"input_ids": ids, "attention_mask": mask})
    assert (batch[:, mask == 0] == 0).all()
    for row, length in enumerate(lengths):
        alone_ids, alone_mask = ids[row : row + 1, :length], mask[row : row + 1, :length]
        (alone,) = session.run(None, {"input_ids": alone_ids, "attention_mask": alone_mask})
        numpy.testing.assert_allclose(batch[:, row, :length], alone[:, 0], rtol=0, atol=1e-6)


def test_the_docs_script_runs_without_torch_and_gives_the_plugins_representations(
    export_dir, plugin_model, tmp_path
):
    output = tmp_path / "output.npz"
    # cwd outside the project, so that nothing comes from the plugin's tree; the environment's onnxruntime.
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, str(RUN_DOCS_SCRIPT), str(DOCS_PAGE), export_dir, str(output)]
    result = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
    )
    assert result.returncode == 0, result.stderr[-3000:]
    ran = numpy.load(output)
    assert ran["attention_mask"].sum(axis=1).tolist()[0] != ran["attention_mask"].sum(axis=1).tolist()[1]
    expected = _plugin_hidden_states(plugin_model, ran["input_ids"], ran["attention_mask"])
    assert float(numpy.abs(ran["hidden_states"] - expected).max()) <= 1e-5


def test_force_replaces_a_previous_export_only(masked_elmo_archive, tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "old.txt").write_text("keep me")
    for force in (False, True):
        with pytest.raises(Refusal, match="replaces only maelmo-export's own output"):
            onnx_export.export_onnx_archive(masked_elmo_archive, str(tmp_path / "notes"), force=force)
    assert os.listdir(tmp_path / "notes") == ["old.txt"]
    onnx_export.export_onnx_archive(masked_elmo_archive, str(tmp_path / "export"))
    with pytest.raises(Refusal, match="holds a previous output of maelmo-export.*--force"):
        onnx_export.export_onnx_archive(masked_elmo_archive, str(tmp_path / "export"))
    onnx_export.export_onnx_archive(masked_elmo_archive, str(tmp_path / "export"), force=True)
    assert set(os.listdir(tmp_path / "export")) == EXPORT_FILES


def test_without_the_onnx_packages_the_export_says_what_to_install(
    masked_elmo_archive, tmp_path, monkeypatch
):
    real_find_spec = onnx_export.importlib.util.find_spec

    def find_spec(name, package=None):
        return None if name == "onnxscript" else real_find_spec(name, package)

    monkeypatch.setattr(onnx_export.importlib.util, "find_spec", find_spec)
    with pytest.raises(ConfigurationError, match=r"pip install 'maelmo_plugin\[onnx\]'"):
        onnx_export.export_onnx_archive(masked_elmo_archive, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # CI runs it
def test_the_pages_export_commands_run_one_after_the_other_as_written(masked_elmo_archive, tmp_path):
    """docs/onnx.md's first block, then its int8 block, on the same directory: the second must not be refused."""
    import shlex

    from tests.readme_commands_test import commands

    lines = commands(DOCS_PAGE.read_text(encoding="utf-8"), "maelmo-export runs/sample/model.tar.gz")
    assert len(lines) == 2 and "--quantize int8" in lines[1]
    for line in lines:
        words = shlex.split(line.replace("runs/sample/model.tar.gz", masked_elmo_archive))
        words = [str(tmp_path / "onnx") if word == "runs/sample/onnx" else word for word in words]
        words = [word for word in words if not word.startswith("[")]  # "[--force]": an option, as written
        run_allennlp_in_process(*words[1:])
    assert (tmp_path / "onnx" / "model_int8.onnx").is_file()
