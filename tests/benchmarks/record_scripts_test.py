"""The scripts that write a committed CPU record (`--record`) write the rows the guides name: the record's title,
header and rows' first cells as committed, and its cells in their formats. Nothing is measured here."""

import argparse
import importlib.util
import json
import sys

import pytest

from tests import PROJECT_ROOT

SCRIPTS = PROJECT_ROOT / "benchmarks"
RECORDS = SCRIPTS / "results" / "records"


def load(name):
    """A benchmark script as a module, importable by name as from the command line (`import common`)."""
    if name in sys.modules and getattr(sys.modules[name], "__file__", "") == str(SCRIPTS / f"{name}.py"):
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


common = load("common")
core_load = load("core_load")


def committed(name: str) -> dict:
    return json.loads((RECORDS / f"{name}.json").read_text(encoding="utf-8"))


def test_encoder_speeds_record_grid_is_the_committed_records_rows():
    encoder_speed = load("encoder_speed")
    record = committed("encoder_speed")
    grid = encoder_speed.record_grid(encoder_speed.RECORD_SIZES, encoder_speed.RECORD_BATCH_SIZES)
    first_cells = [[run, size.replace("x", "/"), str(batch)] for run, size, batch in grid]
    assert first_cells == [row[:3] for row in record["rows"]]
    assert ["run", *encoder_speed.HEADER] == record["header"]
    assert encoder_speed.COMPUTED == record["computed"]


def test_encoder_flops_record_grid_is_the_committed_records_rows():
    encoder_flops = load("encoder_flops")
    record = committed("encoder_flops")
    defaults = argparse.Namespace(size="512x2048", batch_size=16, paper_size="768x4096", paper_batch_size=64)
    rows = [
        [run, name, size.replace("x", "/"), str(batch), f"≥{encoder_flops.TARGET:.0%}" if judged else "–"]
        for run, size, batch, judged in encoder_flops.record_grid(defaults)
        for name in (encoder_flops.OURS, encoder_flops.TORCH_LSTM)
    ]
    assert rows == [row[:4] + row[7:8] for row in record["rows"]]
    assert ["run", *encoder_flops.HEADER] == record["header"]


@pytest.mark.parametrize(
    "value, text",
    [
        (80.71, "80.7"),
        (148.2, "148"),
        (344.49, "344"),
        (1234.5, "1,234"),
        (9.996, "10.0"),
        (99.96, "100"),
        (0.0, "0"),
    ],
)
def test_cells_keep_three_significant_figures(value, text):
    assert common.significant(value) == text


def test_the_load_core_must_not_be_the_measured_one():
    import os

    with pytest.raises(SystemExit, match="may run on"):
        core_load.check_core(sorted(os.sched_getaffinity(0))[0])


def test_representations_record_grid_names_the_committed_records_rows():
    """Each row the grid writes names one committed row, in order (as a guide names it: draw_records.find_row)."""
    representations = load("representations")
    draw_records = load("draw_records")
    record = committed("representations")
    rows = [
        [size.replace("x", "/"), representations.KERNELS[kernel], str(batch)]
        for size, _, kernels in representations.RECORD_GRID
        for kernel in kernels
        for batch in representations.BATCH_SIZES
    ]
    assert [draw_records.find_row(record, "; ".join(row)) for row in rows] == list(range(len(record["rows"])))
    assert (representations.TITLE, representations.HEADER) == (record["title"], record["header"])


def test_onnx_paritys_two_models_are_the_committed_records_rows():
    pytest.importorskip("onnx")
    onnx_parity = load("onnx_parity")
    record = committed("onnx_parity")
    vocabulary = (PROJECT_ROOT / "tests" / "fixtures" / "lm" / "vocab.txt").read_text().split()
    names = [
        onnx_parity.initialised_name(768, 4096, 2, 0),
        onnx_parity.fixture_name(16, 24, 2, len(vocabulary)),
    ]
    assert names == [row[0] for row in record["rows"]]
    assert (onnx_parity.TITLE, onnx_parity.HEADER) == (record["title"], record["header"])
    assert [onnx_parity.exponent(value) for value in (6.444e-6, 1.1e-10)] == ["6.44e-6", "1.10e-10"]
    assert [common.significant(value, 2) for value in (343.4, 1.08, 5.0, 0.5312)] == [
        "343",
        "1.1",
        "5.0",
        "0.53",
    ]


def load_embedding_throughput():
    """embedding_throughput.py, after the scripts it imports (as the command line finds them, beside it)."""
    pytest.importorskip("onnx")
    for name in ("representations", "onnx_parity", "embedding_baselines"):
        load(name)
    return load("embedding_throughput")


def test_embedding_throughputs_record_rows_and_cells_are_the_committed_records():
    embedding_throughput = load_embedding_throughput()
    record = committed("embedding_throughput_avx512")
    columns = embedding_throughput.COLUMNS
    assert ["side", *columns["EPYC"], *columns["Xeon"]] == record["header"]
    assert [row for row, _ in embedding_throughput.RECORD_ROWS] == [row[0] for row in record["rows"]]
    assert embedding_throughput.COMPUTED == record["computed"]
    assert embedding_throughput.TITLE == record["title"]
    rates = {1: {"plugin paper fp32": 4.571, "plugin paper int8": 18.79}, 32: {"plugin paper fp32": 14.48}}
    assert embedding_throughput.group_cells("Xeon", "plugin paper int8", rates) == ["18.79 (4.11x fp32)", "–"]
    elmo = embedding_throughput.ELMO
    rates = {1: {elmo: 1.0, "plugin paper int8": 7.381}, 32: {elmo: 1.0, "plugin paper int8": 0.634}}
    assert embedding_throughput.group_cells("EPYC", "plugin paper int8", rates) == [
        "7.38",
        "**7.38x**",
        "0.63",
        "0.63x",
    ]
    rates = {1: {elmo: 1.0, "plugin small int8": 61.74}, 32: {elmo: 1.0, "plugin small int8": 146.2}}
    assert embedding_throughput.group_cells("EPYC", "plugin small int8", rates) == [
        "61.74",
        "61.7x",
        "146",
        "146x",
    ]


def test_the_embedding_record_keeps_the_other_cpus_columns(tmp_path):
    embedding_throughput = load_embedding_throughput()
    path = tmp_path / "record.json"
    path.write_text((RECORDS / "embedding_throughput_avx512.json").read_text(encoding="utf-8"))
    kept = embedding_throughput.kept_group(str(path), "Xeon")
    assert kept["cells"]["plugin 768/4096 int8"] == ["18.79 (4.11x fp32)", "32.54 (2.25x fp32)"]
    assert "transcribed" in kept["commit"] and "--no-baselines" in kept["command"]
    assert embedding_throughput.kept_group(str(tmp_path / "none.json"), "Xeon") == {}


def test_the_wikitext_reader_gives_each_scripts_sentences(tmp_path):
    corpus = tmp_path / "wiki.txt"
    corpus.write_text(" \n = Title = \n One two three . Four five . Six seven eight ? Nine . \n . \n")
    read = common.wikitext_sentences
    assert read(str(corpus)) == [
        "One two three",
        "Four five",
        "Six seven eight ? Nine .",
    ]  # embedding_storage
    assert read(str(corpus), split_at=None, min_words=3) == [
        "One two three .",
        "Four five .",
        "Six seven eight ?",
    ]  # onnx_parity: a word may be the period
    assert read(str(corpus), period=True)[-1] == "Six seven eight ? Nine . ."  # bulk_embedding
    representations = read(str(corpus), min_words=3, period=True, strip_lines=False)
    assert representations == ["One two three .", "Six seven eight ? Nine ."]
    assert read(str(corpus), 2) == ["One two three", "Four five"]
