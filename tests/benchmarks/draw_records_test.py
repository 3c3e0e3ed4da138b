"""benchmarks/draw_records.py: docs/benchmarks/*.md and their index drawn from the benchmarks' records, and kept in
step with them."""

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


def test_the_pages_have_each_records_table_command_machine_and_commit(records, tmp_path):
    directory, first, second = records
    docs = tmp_path / "docs"
    drawn = draw_records.main([directory / "records", directory], docs)
    # encoder_speed is on PAGES' second page; scale_out_embedding on the third
    assert set(drawn) == {"benchmarks.md", *(f"benchmarks/{stem}.md" for stem, _, _ in draw_records.PAGES)}
    for page, text in drawn.items():
        assert (docs / page).read_text() == text
    assert not list(docs.rglob("*.partial"))
    text = drawn["benchmarks/pretraining_cpu.md"] + drawn["benchmarks/embedding.md"]
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
    index = drawn["benchmarks.md"]
    assert "(benchmarks/pretraining_cpu.md#encoder-speed-cpu)" in index
    assert "(benchmarks/embedding.md#scale-out--embedding)" in index
    assert "## Encoder speed, CPU" not in index  # the index lists the records; their pages draw them


def test_redrawing_gives_the_same_bytes(records, tmp_path):
    directory, _, _ = records
    docs = tmp_path / "docs"
    draw_records.main([directory / "records", directory], docs)
    first = {path: path.read_bytes() for path in docs.rglob("*.md")}
    draw_records.main([directory / "records", directory], docs)
    assert {path: path.read_bytes() for path in docs.rglob("*.md")} == first
    assert len(first) == 1 + len(draw_records.PAGES)


def test_a_record_on_no_page_goes_at_the_end_of_the_last_page(records):
    directory, _, _ = records
    loaded = draw_records.load([directory / "records", directory])
    loaded["zeta"] = loaded["alpha"] = loaded["encoder_speed"]
    pages = draw_records.pages(loaded)
    assert [stem for stem, _, _ in pages] == [stem for stem, _, _ in draw_records.PAGES]
    assert pages[1][2] == ["encoder_speed"]
    assert pages[-1][2][-2:] == ["alpha", "zeta"]


def test_a_pipe_in_a_cell_is_escaped():
    section = draw_records.section(record("T", "c", "m", "abc1234", [["a | b", "1", "2"]]))
    assert "| a \\| b | 1 | 2 |" in section


def test_a_column_named_twice_is_refused(tmp_path):
    twice = record("T", "c", "m", "abc1234", [["a", "1", "2"]])
    twice["header"] = ["side", "ratio", "ratio"]
    (tmp_path / "twice.json").write_text(json.dumps(twice))
    with pytest.raises(ValueError, match=r"twice: columns named twice .*\['ratio'\]"):
        draw_records.load([tmp_path])


def test_a_row_is_named_by_its_first_cells():
    table = record(
        "T",
        "c",
        "m",
        "abc1234",
        [
            ["quiet machine", "512/2048, batch 16", "**1.76x**"],
            ["busy", "512/2048 (other core)", "1.63x"],
            ["busy", "512/2048: the paper's", "1.63x"],
            ["busy", "512/2048", "1.5x"],
        ],
    )
    assert draw_records.find_row(table, "quiet machine") == 0
    # a cell's beginning names it; bold markers aside
    assert draw_records.find_row(table, "quiet machine; 512/2048; 1.76x") == 0
    # of the three rows it begins, the one it names whole
    assert draw_records.find_row(table, "busy; 512/2048") == 3
    with pytest.raises(ValueError, match="3 rows begin 'busy'"):
        draw_records.find_row(table, "busy")
    with pytest.raises(ValueError, match="0 rows begin '512/2048'"):
        draw_records.find_row(table, "512/2048")  # the first cells, in order
    with pytest.raises(ValueError, match="0 rows begin 'busy'; '512/204'"):
        draw_records.find_row(table, "busy; 512/204")  # a beginning ends at a space or punctuation
    with pytest.raises(ValueError, match="0 rows begin 'quiet machine'; 'busy'"):
        draw_records.find_row(table, "quiet machine; busy")


def test_computed_columns_and_rows_are_drawn_from_the_records_own_figures(tmp_path):
    table = record(
        "T", "c", "m", "abc1234", [["int8", "9", "1,000.5"], ["fp32", "4", "–"], ["bf16", "6", "2"]]
    )
    table["header"] = ["side", "tok/s", "baseline tok/s"]
    table["computed"] = [
        {"column": "over baseline", "ratio": ["tok/s", "baseline tok/s"]},
        {"row": "int8 over fp32", "ratio": ["int8", "fp32"], "columns": ["tok/s", "baseline tok/s"]},
    ]
    (tmp_path / "t.json").write_text(json.dumps(table))
    loaded = draw_records.load([tmp_path])["t"]
    # the column follows the last column it comes from; the row, the last row; 9 / 1000.5 = 0.008995...
    assert loaded["header"] == ["side", "tok/s", "baseline tok/s", "over baseline"]
    assert loaded["rows"] == [
        ["int8", "9", "1,000.5", "0.01x"],
        ["fp32", "4", "–", "–"],
        ["int8 over fp32", "2.25x", "–", "–"],
        ["bf16", "6", "2", "3.00x"],
    ]
    written = json.loads((tmp_path / "t.json").read_text())
    assert written["rows"][0] == ["int8", "9", "1,000.5"]  # the record keeps the ratio, not its cells
    text = draw_records.section(loaded)
    assert (
        '* Computed from the record\'s own figures: column "over baseline" is "tok/s" over "baseline tok/s"'
        in text
    )
    assert '; row "int8 over fp32" is row "int8" over row "fp32"' in text
    assert "| int8 over fp32 | 2.25x | – | – |" in text
    table["computed"] = [{"column": "c", "ratio": ["tok/s", "no such column"]}]
    (tmp_path / "t.json").write_text(json.dumps(table))
    with pytest.raises(ValueError, match="t: computed .*'no such column' is not in list"):
        draw_records.load([tmp_path])


def test_the_committed_pages_are_what_the_committed_records_draw():
    """docs/benchmarks.md and docs/benchmarks/ cannot go stale: a changed record without redrawn pages fails here."""
    drawn = draw_records.draw(draw_records.load())
    docs = PROJECT_ROOT / "docs"
    for page, text in drawn.items():
        assert (docs / page).read_text(encoding="utf-8") == text, (
            f"rerun `python benchmarks/draw_records.py` ({page})"
        )
    committed = {path.relative_to(docs).as_posix() for path in (docs / "benchmarks").glob("*.md")}
    assert committed == {page for page in drawn if page.startswith("benchmarks/")}, "a page no record draws"


def test_links_into_the_pages_name_their_sections():
    docs = PROJECT_ROOT / "docs"
    headings = {
        (path.relative_to(PROJECT_ROOT).as_posix(), draw_records.slug(line[3:]))
        for path in (docs / "benchmarks").glob("*.md")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("## ")
    }
    assert len(headings) > 30
    pages = [PROJECT_ROOT / "README.md", *docs.rglob("*.md"), PROJECT_ROOT / "benchmarks" / "README.md"]
    # prose only: an example in a code block is no link
    prose = {page: re.sub(r"^```.*?^```", "", page.read_text("utf-8"), flags=re.M | re.S) for page in pages}
    links = {
        (page.relative_to(PROJECT_ROOT).as_posix(), (page.parent / target).resolve(), anchor)
        for page in pages
        for target, anchor in re.findall(
            r"(?:\(|\]: )((?:\.\./|docs/)*benchmarks/\w+\.md)#([\w-]+)", prose[page]
        )
    }
    assert len(links) > 50  # the search finds the links
    broken = sorted(
        (page, anchor)
        for page, target, anchor in links
        if (target.relative_to(PROJECT_ROOT).as_posix(), anchor) not in headings
    )
    assert not broken, f"links to no section of docs/benchmarks/: {broken}"
    stale = sorted(page.name for page in pages if re.search(r"(?<![\w/])benchmarks\.md#", prose[page]))
    assert not stale, f"links into the index page's sections, which moved to docs/benchmarks/: {stale}"
