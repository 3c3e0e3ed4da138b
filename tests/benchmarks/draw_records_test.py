"""benchmarks/draw_records.py: docs/benchmarks.md drawn from the benchmarks' records, and kept in step with them."""

import importlib.util
import json
import re

import pytest

from tests import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "benchmarks" / "draw_records.py"
spec = importlib.util.spec_from_file_location("draw_records", SCRIPT)
draw_records = importlib.util.module_from_spec(spec)
spec.loader.exec_module(draw_records)


def record(title, command, machine, commit, rows, **data):
    return {
        "title": title,
        "command": command,
        "machine": machine,
        "commit": commit,
        "date": "2026-11-28",
        "header": ["side", "tok/s", "vs baseline"],
        "rows": rows,
        "notes": f"What {title} shows.",
        "data": data,
    }


@pytest.fixture
def records(tmp_path):
    """Two records in a records/ folder, one beside it, and a JSON file that is not a record."""
    (tmp_path / "records").mkdir()
    first = record(
        "Encoder speed, CPU",
        "$PIN .venv/bin/python benchmarks/encoder_speed.py\n$PIN .venv/bin/python benchmarks/encoder_speed.py --paper",
        "AMD EPYC, AVX-512, 2 cores",
        "ebe93a5",
        [["Masked ELMo", "344", "2.80x"], ["ElmoLstm", "123", "1.00x"]],
        transcribed=True,
        source="docs/performance.md at ebe93a5",
    )
    second = record(
        "Scale-out | embedding",
        "benchmarks/scale_out_embedding.py --archive A",
        "one NVIDIA H200",
        "b68de63",
        [["processes", "91", "1.00x"]],
        seconds={"processes": 89.6},
    )
    (tmp_path / "records" / "encoder_speed.json").write_text(json.dumps(first))
    (tmp_path / "scale_out_embedding.json").write_text(json.dumps(second))
    (tmp_path / "bert_metrics.json").write_text(json.dumps({"perplexity": 4.2}))
    return tmp_path, first, second


def test_the_page_has_each_records_table_command_machine_and_commit(records):
    directory, first, second = records
    page = directory / "benchmarks.md"
    text = draw_records.main([directory / "records", directory], page)
    assert page.read_text() == text
    assert not (directory / "benchmarks.md.partial").exists()
    assert "do not edit" in text and "python benchmarks/draw_records.py" in text
    for each in (first, second):
        assert f"## {each['title']}\n" in text
        assert f"Machine: {each['machine']}" in text
        assert f"Commit: {each['commit']} ({each['date']})" in text
        assert each["notes"] in text
        for command in each["command"].splitlines():
            assert f"`{command}`" in text
    assert "| side | tok/s | vs baseline |" in text
    assert "| Masked ELMo | 344 | 2.80x |" in text
    assert "| ElmoLstm | 123 | 1.00x |" in text
    assert "| processes | 91 | 1.00x |" in text
    assert "transcribed from docs/performance.md at ebe93a5" in text
    assert "## Scale-out \\| embedding" not in text  # a title is not a table cell
    assert "perplexity" not in text  # a result file without the schema is no record


def test_the_order_is_fixed_then_alphabetical(records):
    directory, _, _ = records
    loaded = draw_records.load([directory / "records", directory])
    loaded["zeta"] = loaded["alpha"] = loaded["encoder_speed"]
    assert draw_records.ordered(loaded) == ["encoder_speed", "scale_out_embedding", "alpha", "zeta"]


def test_a_pipe_in_a_cell_is_escaped():
    section = draw_records.section(record("T", "c", "m", "abc1234", [["a | b", "1", "2"]]))
    assert "| a \\| b | 1 | 2 |" in section


def test_the_committed_page_is_what_the_committed_records_draw():
    """docs/benchmarks.md cannot go stale: a changed record without a redrawn page fails here."""
    drawn = draw_records.draw(draw_records.load())
    committed = (PROJECT_ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert committed == drawn, "rerun `python benchmarks/draw_records.py`"


def test_links_into_the_page_name_its_sections():
    headings = {
        draw_records.slug(line[3:])
        for line in (PROJECT_ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("## ")
    }
    pages = [PROJECT_ROOT / "README.md", *(PROJECT_ROOT / "docs").rglob("*.md")]
    links = {
        (page.relative_to(PROJECT_ROOT).as_posix(), anchor)
        for page in pages
        for anchor in re.findall(r"benchmarks\.md#([\w-]+)", page.read_text(encoding="utf-8"))
    }
    broken = sorted(link for link in links if link[1] not in headings)
    assert not broken, f"links to no section of docs/benchmarks.md: {broken}"
