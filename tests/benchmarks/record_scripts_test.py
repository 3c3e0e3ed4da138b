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
