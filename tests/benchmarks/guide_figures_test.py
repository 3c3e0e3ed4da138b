"""benchmarks/guide_figures.py: every speed ratio that a guide quotes is a number of a record that its block cites."""

import importlib.util
import json
import sys

import pytest

from tests import PROJECT_ROOT

SCRIPTS = PROJECT_ROOT / "benchmarks"


def load(name):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # guide_figures imports draw_records by name, as from the command line
    spec.loader.exec_module(module)
    return module


draw_records = load("draw_records")
guide_figures = load("guide_figures")

ANCHOR = "encoder-speed-cpu"  # draw_records.slug("Encoder speed, CPU")


def guides(tmp_path, readme: str, benchmarks_page: str = "") -> tuple:
    """A repository in `tmp_path`: one record, "Encoder speed, CPU", holding 1.984x, 2.5 and 0.885; a README."""
    records = tmp_path / "records"
    records.mkdir()
    record = {
        "title": "Encoder speed, CPU",
        "command": "$PIN .venv/bin/python benchmarks/encoder_speed.py",
        "machine": "AMD EPYC",
        "commit": "abc1234",
        "date": "2026-11-28",
        "header": ["side", "speed-up", "target"],
        "rows": [["Masked ELMo", "1.984x", "≥2.5x"]],
        "notes": "At batch 64, 0.885x.",
        "data": {},
    }
    (records / "encoder_speed.json").write_text(json.dumps(record), encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(readme, encoding="utf-8")
    (tmp_path / "docs" / "benchmarks.md").write_text(benchmarks_page, encoding="utf-8")
    return tmp_path, [records]


def test_the_guides_quote_only_figures_their_cited_records_hold():
    assert guide_figures.records(), "no records found"
    failing = guide_figures.failures()
    assert not failing, "blocks whose figure no record they cite holds:\n" + "\n".join(failing)


def test_a_figure_the_cited_record_holds_at_its_precision_passes(tmp_path):
    readme = (
        "# Guide\n\n"
        f"The encoder is 1.98x faster ([record](docs/benchmarks.md#{ANCHOR})).\n\n"
        f"* At one decimal, 2.0 times; at batch 64, 0.89x (rounded half up; [record](docs/benchmarks.md#{ANCHOR})).\n"
        "* Through a reference link: 2.5x is the target [record][encoder].\n\n"
        f"[encoder]: docs/benchmarks.md#{ANCHOR}\n"
    )
    root, directories = guides(tmp_path, readme)
    assert guide_figures.failures(root, directories) == []


def test_a_figure_that_no_cited_record_holds_is_reported(tmp_path):
    readme = (
        "# Guide\n\n"
        f"The encoder is 1.97x faster ([record](docs/benchmarks.md#{ANCHOR})).\n\n"
        "The encoder is 1.98x faster, citing nothing.\n\n"
        f"0.885 rounds half up: 0.88x is not held ([record](docs/benchmarks.md#{ANCHOR})).\n\n"
        "| side | speed-up |\n|---|---|\n"
        f"| cited | 1.98x ([record](docs/benchmarks.md#{ANCHOR})) |\n"
        "| the next row cites nothing | 2.5x |\n\n"
        "A link to a section that no record draws: 1.98x ([record](docs/benchmarks.md#no-such-record)).\n"
    )
    root, directories = guides(tmp_path, readme, benchmarks_page="A drawn page is not checked: 9.99x.\n")
    failing = guide_figures.failures(root, directories)
    assert [line.split(" held by")[0] for line in failing] == [
        "README.md:3: 1.97",
        "README.md:5: 1.98",
        "README.md:7: 0.88",
        "README.md:12: 2.5",
        "README.md:14: 1.98",
    ], failing
    assert all(line.startswith("README.md:") for line in failing)  # docs/benchmarks.md is skipped


def test_the_command_line_exits_1_while_a_block_fails(tmp_path, monkeypatch, capsys):
    root, directories = guides(tmp_path, "# Guide\n\n3.14x, citing nothing.\n")
    failures = guide_figures.failures
    monkeypatch.setattr(guide_figures, "failures", lambda: failures(root, directories))
    with pytest.raises(SystemExit) as exited:
        guide_figures.main()
    assert exited.value.code == 1
    out = capsys.readouterr().out
    assert "README.md:3: 3.14 held by no cited record" in out
    assert "1 block(s) quote a figure that no record they cite holds" in out
