"""
`allennlp maelmo-export --format onnx --quantize int8`: model_int8.onnx beside model.onnx, every MatMul (those
inside the recurrences' `Scan` bodies included) in int8, and representations close to model.onnx's.

Needs the `onnx` extra (`pip install '.[onnx]'`; scripts/setup.sh installs it): skipped without it.
"""

import os
import subprocess
import sys

import numpy
import pytest
from allennlp.common.checks import ConfigurationError

from maelmo_plugin.onnx import export as onnx_export
from maelmo_plugin.onnx.quantize import INT8_MODEL_FILE, cosines, operator_counts
from tests import run_allennlp
from tests.onnx.export_test import (
    DOCS_PAGE,
    EXPORT_FILES,
    REASON,
    RUN_DOCS_SCRIPT,
    _encode,
    _plugin_hidden_states,
    _sentences,
)

onnx = pytest.importorskip("onnx", reason=REASON)
pytest.importorskip("onnxscript", reason=REASON)
pytest.importorskip("onnxruntime", reason=REASON)

# The fixture (d 16, 24 cells, 2 layers, trained one epoch) on its corpus (130 word-pieces), in batches of
# 4, layers 1 and 2: cosine min 0.99994, mean 0.99997, measured on an AVX2 CPU; 8-bit weights, which
# saturate there (quantize.py), gave min 0.9888, mean 0.9918.
MIN_COSINE, MEAN_COSINE = 0.999, 0.9999
LAYERS = 2


@pytest.fixture(scope="module")
def int8_export_dir(masked_elmo_archive, tmp_path_factory) -> str:
    output = tmp_path_factory.mktemp("onnx_int8_export") / "onnx"
    arguments = ["maelmo-export", masked_elmo_archive, str(output), "--format", "onnx", "--quantize", "int8"]
    result = run_allennlp(arguments, {})
    assert "run model.onnx and model_int8.onnx with onnxruntime" in result.stdout
    return str(output)


def _load(export_dir, name):
    return onnx.load(os.path.join(export_dir, name))


def test_the_int8_model_is_written_beside_the_float32_one_with_its_interface(int8_export_dir):
    assert set(os.listdir(int8_export_dir)) == EXPORT_FILES | {INT8_MODEL_FILE}
    float32, int8 = _load(int8_export_dir, "model.onnx"), _load(int8_export_dir, INT8_MODEL_FILE)
    onnx.checker.check_model(int8)
    assert [str(value) for value in int8.graph.input] == [str(value) for value in float32.graph.input]
    assert [str(value) for value in int8.graph.output] == [str(value) for value in float32.graph.output]
    assert os.path.getsize(os.path.join(int8_export_dir, INT8_MODEL_FILE)) < os.path.getsize(
        os.path.join(int8_export_dir, "model.onnx")
    )


def test_every_matmul_is_quantized_those_in_the_scan_bodies_included(int8_export_dir):
    float32, int8 = _load(int8_export_dir, "model.onnx"), _load(int8_export_dir, INT8_MODEL_FILE)
    # Per layer and direction: the input product outside the Scan; the recurrent and projection ones inside.
    assert operator_counts(float32.graph)["MatMul"] == 6 * LAYERS
    counts = operator_counts(int8.graph)
    assert (counts["MatMul"], counts["MatMulInteger"], counts["DynamicQuantizeLinear"]) == (0, 12, 12)
    scans = [node for node in int8.graph.node if node.op_type == "Scan"]
    assert len(scans) == LAYERS
    for scan in scans:
        (body,) = (attribute.g for attribute in scan.attribute if attribute.name == "body")
        body_counts = operator_counts(body)
        assert (body_counts["MatMul"], body_counts["MatMulInteger"]) == (0, 4)
    # The embedding stays a float32 Gather: h_0 is one of the outputs.
    assert counts["Gather"] == operator_counts(float32.graph)["Gather"]


def test_the_int8_models_representations_are_close_to_the_float32_models(int8_export_dir):
    float32 = onnx_export.onnx_session(int8_export_dir)
    int8 = onnx_export.onnx_session(int8_export_dir, model_file=INT8_MODEL_FILE)
    sentences = _sentences()
    similarity = []
    for start in range(0, len(sentences), 4):
        ids, mask = _encode(int8_export_dir, sentences[start : start + 4])
        inputs = {"input_ids": ids, "attention_mask": mask}
        (expected,), (actual,) = float32.run(None, inputs), int8.run(None, inputs)
        assert actual.shape == expected.shape
        numpy.testing.assert_array_equal(actual[0], expected[0])  # the embedding
        assert (actual[:, mask == 0] == 0).all()
        similarity.append(cosines(actual, expected, mask))
    similarity = numpy.concatenate(similarity, axis=1)
    assert similarity.shape[0] == LAYERS
    assert similarity.min() >= MIN_COSINE
    assert similarity.mean() >= MEAN_COSINE


def test_the_docs_script_runs_the_int8_model_without_torch(int8_export_dir, masked_elmo_archive, tmp_path):
    from allennlp.models.archival import load_archive

    output = tmp_path / "output.npz"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [
        sys.executable,
        str(RUN_DOCS_SCRIPT),
        str(DOCS_PAGE),
        int8_export_dir,
        str(output),
        INT8_MODEL_FILE,
    ]
    result = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
    )
    assert result.returncode == 0, result.stderr[-3000:]
    ran = numpy.load(output)
    model = load_archive(masked_elmo_archive).model.eval()
    expected = _plugin_hidden_states(model, ran["input_ids"], ran["attention_mask"])
    assert cosines(ran["hidden_states"], expected, ran["attention_mask"]).min() >= MIN_COSINE


def test_quantize_goes_with_the_onnx_format_only(masked_elmo_archive, tmp_path):
    output = tmp_path / "out"
    result = run_allennlp(
        ["maelmo-export", masked_elmo_archive, str(output), "--quantize", "int8"], {}, check=False
    )
    assert result.returncode == 2
    assert "--quantize goes with --format onnx" in result.stderr
    assert not output.exists()
    with pytest.raises(ConfigurationError, match=r"quantize='int4'.*\('int8',\)"):
        onnx_export.export_onnx_archive(masked_elmo_archive, str(output), quantize="int4")
    assert not output.exists()


def test_a_quantization_that_misses_matmuls_stops_the_export_and_writes_nothing(
    masked_elmo_archive, tmp_path, monkeypatch
):
    def copy_float32(directory):
        model = _load(directory, "model.onnx")
        onnx.save(model, os.path.join(directory, INT8_MODEL_FILE))

    monkeypatch.setattr(onnx_export, "quantize_int8", copy_float32)
    output = tmp_path / "out"
    with pytest.raises(
        RuntimeError, match=r"model_int8.onnx has 0 of the 12 MatMuls in int8 \(and 12 in float32\)"
    ):
        onnx_export.export_onnx_archive(masked_elmo_archive, str(output), quantize="int8")
    assert not output.exists()
    assert os.listdir(tmp_path) == []
