"""
The int8 ONNX export (`allennlp maelmo-export ARCHIVE DIR --format onnx --quantize int8`): `model_int8.onnx`
beside `model.onnx`, the same graph and interface with every MatMul dynamically quantized by ONNX Runtime's
own quantizer, so that it runs in ONNX Runtime alone, as the float32 model does.

    model_int8.onnx   inputs and output as model.onnx; each of the L * 6 MatMuls (per layer and direction
                      the input product, and inside the layer's `Scan` the recurrent and projection
                      products) becomes a `MatMulInteger` of the input quantized per call (uint8, one
                      scale per tensor) by the weight quantized once (int8, one scale per output column,
                      7 bits); embedding, gates, cell state and LayerNorm stay in float32

Why 7-bit weights (`reduce_range`): on a CPU without VNNI (AVX2) ONNX Runtime multiplies uint8 by int8 with
`vpmaddubsw`, whose 16-bit sums of two products saturate with 8-bit weights: at the paper's size the
representations' cosine to float32 fell to 0.983 (measured; 0.9999 with 7 bits, docs/onnx.md).
"""

import logging
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy

INT8_MODEL_FILE = "model_int8.onnx"
QUANTIZATIONS = ("int8",)
# The export's self-check (on its probe batch, layers 1 ... L, real tokens): a quantization that went wrong
# (8-bit weights saturating on AVX2: 0.98 at the paper's size) stays below it; docs/onnx.md has the measured
# values (0.9999 and above).
INT8_MIN_COSINE = 0.995


@contextmanager
def _quiet_root_logger() -> Iterator[None]:
    # quantize_dynamic warns on the root logger that the model was not "pre-processed" (ONNX Runtime's
    # shape-inference and optimisation script, which would change nothing that it quantizes here).
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def quantize_int8(directory: str, source_file: str = "model.onnx") -> str:
    """
    Writes `directory`/model_int8.onnx, the dynamic int8 quantization of `directory`/`source_file`, and
    returns its path. Written to a partial file and moved into place when complete.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    source = os.path.join(directory, source_file)
    target = os.path.join(directory, INT8_MODEL_FILE)
    # Written under its final name in a partial folder: a model past 2 GB keeps its weights in an external
    # file whose name the model records, so that file must keep the name it was written with.
    partial = os.path.join(directory, INT8_MODEL_FILE + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    try:
        with _quiet_root_logger():
            quantize_dynamic(
                source,
                os.path.join(partial, INT8_MODEL_FILE),
                # The MatMuls only: the embedding's `Gather` stays exact, as h_0 is one of the outputs.
                op_types_to_quantize=["MatMul"],
                per_channel=True,
                reduce_range=True,
                weight_type=QuantType.QInt8,
                # The recurrent and projection products are inside the `Scan` bodies: 8 of the 12 MatMuls
                # at L = 2, most of the time at batch 1.
                extra_options={"EnableSubgraph": True, "MatMulConstBOnly": True},
                use_external_data_format=os.path.exists(source + ".data"),
            )
        # The external weights first: the model file appears only once they are in place.
        for name in sorted(os.listdir(partial), key=lambda name: name == INT8_MODEL_FILE):
            os.replace(os.path.join(partial, name), os.path.join(directory, name))
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target


def operator_counts(graph: Any) -> Counter:
    """How many nodes of each operator type `graph` (an onnx GraphProto) holds, its subgraphs included."""
    counts: Counter = Counter()
    for node in graph.node:
        counts[node.op_type] += 1
        for attribute in node.attribute:
            subgraphs = [*attribute.graphs, *([attribute.g] if attribute.HasField("g") else [])]
            for subgraph in subgraphs:
                counts.update(operator_counts(subgraph))
    return counts


def cosines(actual: numpy.ndarray, expected: numpy.ndarray, mask: numpy.ndarray) -> numpy.ndarray:
    """
    (L, real tokens): each word-piece's cosine between `actual` and `expected` (both (L + 1, batch, tokens,
    d)) at layers 1 ... L. Layer 0, the embedding, is exact in both.
    """
    real = mask.astype(bool)
    a, b = actual[1:, real].astype(numpy.float64), expected[1:, real].astype(numpy.float64)
    return (a * b).sum(-1) / numpy.linalg.norm(a, axis=-1) / numpy.linalg.norm(b, axis=-1)
