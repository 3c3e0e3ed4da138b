"""benchmarks/guide_figures.py: every ratio a guide quotes is the record field it cites, at its printed precision."""

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

# encoder_speed is drawn on PAGES' second page; draw_records.slug("Encoder speed, CPU")
URL = "docs/benchmarks/pretraining_cpu.md#encoder-speed-cpu"


def guides(tmp_path, readme: str, page: str = "") -> tuple:
    """A repository in `tmp_path`: one record, encoder_speed, a README and docs/performance.md."""
    records = tmp_path / "records"
    records.mkdir()
    record = {
        "title": "Encoder speed, CPU",
        "command": "$PIN .venv/bin/python benchmarks/encoder_speed.py",
        "machine": "AMD EPYC",
        "commit": "abc1234",
        "date": "2026-11-28",
        "header": ["run", "batch", "Masked ELMo tok/s", "ElmoLstm tok/s", "speed-up", "second run", "target"],
        "rows": [
            ["quiet machine", "16", "344", "123", "2.80x", "2.78x, 0.885x", "≥2.5x"],
            ["quiet machine", "64 (the paper's)", "411", "272", "**1.51x**", "1.50x, 1.49x", "≥2.5x"],
            ["busy", "16", "354", "132", "1.984x", "2.65x, 2.66x", "≥2.5x"],
        ],
        "notes": "At batch 64, 0.885x.",
        "data": {"headroom": 608.4, "runs": {"epoch 2": 25005}},
        "computed": [{"column": "over ElmoLstm", "ratio": ["Masked ELMo tok/s", "ElmoLstm tok/s"]}],
    }
    (records / "encoder_speed.json").write_text(json.dumps(record), encoding="utf-8")
    (tmp_path / "docs" / "benchmarks").mkdir(parents=True)
    (tmp_path / "README.md").write_text(readme, encoding="utf-8")
    (tmp_path / "docs" / "performance.md").write_text(page, encoding="utf-8")
    (tmp_path / "docs" / "benchmarks.md").write_text("The index is not checked: 9.99x.\n", encoding="utf-8")
    (tmp_path / "docs" / "benchmarks" / "pretraining_cpu.md").write_text("Drawn, not checked: 9.99x.\n")
    return tmp_path, [records]


def test_the_guides_cite_the_record_fields_they_quote():
    assert guide_figures.figures() > 100, "the search finds the guides' figures"
    failing = guide_figures.failures()
    assert not failing, "figures that are not the field they cite:\n" + "\n".join(failing)


def test_a_figure_that_is_its_field_passes_at_each_precision(tmp_path):
    readme = (
        "# Guide\n\n"
        f'The encoder is [2.80x]({URL} "encoder_speed: quiet machine; 16 > speed-up") faster,\n'
        f'[2.8x]({URL} "encoder_speed: quiet machine; 16 > speed-up") at one decimal and\n'
        f'[3 times]({URL} "encoder_speed: quiet machine; 16 > speed-up") as an integer;\n'
        f'[1.98x]({URL} "encoder_speed: busy > speed-up") of 1.984, [1.5x]({URL}\n'
        '  "encoder_speed: quiet machine; 64 > speed-up") of a bold cell, the row named by its cells\' beginnings.\n\n'
        f'* Rounded half up: [0.89x]({URL} "encoder_speed: quiet machine; 16 > second run #2") of 0.885.\n'
        f'* A data field: [608x]({URL} "encoder_speed: data > headroom"), [25,005x]({URL}\n'
        '  "encoder_speed: data > runs > epoch 2").\n'
        f'* Computed: [2.68x]({URL} "encoder_speed: busy > over ElmoLstm").\n'
        f'* A range, a field for each: [1.51-2.80x]({URL} "encoder_speed: quiet machine; 64 > speed-up &\n'
        '  encoder_speed: quiet machine; 16 > speed-up").\n'
        "* Code is no figure: `2x`, `sigmoid(2x)`.\n\n"
        "```\n9.99x\n```\n"
    )
    page = (
        "| side | speed-up |\n|---|---|\n"
        "| cited by reference | [2.8x][speed] and [2.5x][target] |\n\n"
        f'[speed]: {URL[5:]} "encoder_speed: quiet machine; 16 > speed-up"\n'
        f"[TARGET]: {URL[5:]}\n"
        "  'encoder_speed: busy > target'\n"
    )
    root, directories = guides(tmp_path, readme, page)
    assert guide_figures.failures(root, directories) == []
    assert guide_figures.figures(root) == 13


def test_a_figure_that_is_not_its_field_fails_one_line_each(tmp_path):
    readme = (
        "# Guide\n\n"
        "1.98x faster, citing nothing.\n"
        f"[2.80x]({URL}) links the record but names no field.\n"
        f'[2.81x]({URL} "encoder_speed: quiet machine; 16 > speed-up") matches no field it cites.\n'
        f'[1.51x]({URL} "encoder_speed: quiet machine; 16 > speed-up") is another field of the record.\n'
        f'[609x]({URL} "encoder_speed: data > headroom") and [3 times]({URL}\n'
        '  "encoder_speed: quiet machine; 64 > speed-up") are wrong integers.\n'
        f'[0.88x]({URL} "encoder_speed: quiet machine; 16 > second run #2") does not round half up.\n'
        f'[2.800x]({URL} "encoder_speed: quiet machine; 16 > speed-up") is more precise than its field.\n'
        f'[2.80x]({URL} "encoder_speed: quiet machine; 16 > no such column") names no column,\n'
        f'[2.80x]({URL} "encoder_speed: quiet machine > speed-up") two rows,\n'
        f'[2.80x]({URL} "encoder_speed: data > runs > epoch 9") no data key,\n'
        f'[2.80x]({URL} "no_such_record: quiet machine; 16 > speed-up") no record,\n'
        f'[2.80x]({URL} "encoder_speed: quiet machine; 16 > second run #3") no third number,\n'
        f'[2.80x]({URL} "encoder_speed: quiet machine; 16 > second run #0") no place 0.\n'
        '[2.80x](docs/benchmarks/embedding.md#encoder-speed-cpu "encoder_speed: quiet machine; 16 > speed-up").\n'
        f'[1.51-2.80x]({URL} "encoder_speed: quiet machine; 16 > speed-up") names one field for two.\n\n'
        "| side | speed-up |\n|---|---|\n"
        "| the row cites nothing | 2.5x |\n"
    )
    root, directories = guides(tmp_path, readme, "A reference to no definition: [2.8x][nowhere].\n")
    failing = guide_figures.failures(root, directories)
    assert failing == [
        "README.md:3: 1.98x cites no field",
        "README.md:4: 2.80x cites no field",
        "README.md:5: 2.81x is not encoder_speed: quiet machine; 16 > speed-up (2.80)",
        "README.md:6: 1.51x is not encoder_speed: quiet machine; 16 > speed-up (2.80)",
        "README.md:7: 3 times is not encoder_speed: quiet machine; 64 > speed-up (1.51)",
        "README.md:7: 609x is not encoder_speed: data > headroom (608.4)",
        "README.md:9: 0.88x is not encoder_speed: quiet machine; 16 > second run #2 (0.885)",
        "README.md:10: 2.800x is more precise than encoder_speed: quiet machine; 16 > speed-up (2.80)",
        "README.md:11: 2.80x cites 'encoder_speed: quiet machine; 16 > no such column': "
        "no column 'no such column' in encoder_speed",
        "README.md:12: 2.80x cites 'encoder_speed: quiet machine > speed-up': 2 rows begin 'quiet machine'",
        "README.md:13: 2.80x cites 'encoder_speed: data > runs > epoch 9': no data key 'epoch 9' in encoder_speed",
        "README.md:14: 2.80x cites 'no_such_record: quiet machine; 16 > speed-up': no record named 'no_such_record'",
        "README.md:15: 2.80x cites 'encoder_speed: quiet machine; 16 > second run #3': "
        "no number in encoder_speed's field 'quiet machine; 16 > second run #3'",
        "README.md:16: 2.80x cites 'encoder_speed: quiet machine; 16 > second run #0': "
        "#0 is not the place of a number in a cell",
        "README.md:17: 2.80x cites encoder_speed but links docs/benchmarks/embedding.md#encoder-speed-cpu, "
        f"not {URL}",
        "README.md:18: 2 figure(s) but 1 field(s) in 'encoder_speed: quiet machine; 16 > speed-up'",
        "README.md:22: 2.5x cites no field",
        "docs/performance.md:1: 2.8x cites no field",
    ], "\n".join(failing)


def test_the_command_line_exits_1_while_a_figure_fails(tmp_path, monkeypatch, capsys):
    root, directories = guides(tmp_path, "# Guide\n\n3.14x, citing nothing.\n")
    failures = guide_figures.failures
    monkeypatch.setattr(guide_figures, "failures", lambda: failures(root, directories))
    monkeypatch.setattr(guide_figures, "REPOSITORY", root)
    monkeypatch.setattr(guide_figures.figures, "__defaults__", (root,))
    with pytest.raises(SystemExit) as exited:
        guide_figures.main()
    assert exited.value.code == 1
    out = capsys.readouterr().out
    assert out == "README.md:3: 3.14x cites no field\n1 of 1 figures fail the record field they cite\n"
