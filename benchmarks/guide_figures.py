"""
Lists the speed ratios in the guides (README.md and docs/*.md, but for the drawn docs/benchmarks.md, the history
and the reproduction pages, which tests/reproduction checks) that no record they cite holds: each "1.98x" or
"1.98 times" must be a number, at its precision, of a record that its own paragraph, bullet or table row links to
(`benchmarks.md#section`, directly or through a reference link). A figure lives once, in its record; a guide
cites it. Exit status 1 while any block fails; tests/benchmarks/guide_figures_test.py runs the same check.

    .venv/bin/python benchmarks/guide_figures.py
"""

import json
import os
import re
import sys
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path

import draw_records

REPOSITORY = Path(__file__).resolve().parents[1]
SKIPPED = {"benchmarks.md", "performance_history.md", "reproduction.md"}
RATIO = re.compile(r"(\d+\.\d+)(?:x\b| times)")
# A paragraph, a bullet or a table row.
BLOCK = re.compile(r"\n(?=\* |\n|\|)")


def records(directories=draw_records.DIRECTORIES) -> dict[str, list[str]]:
    """Each record's section anchor in docs/benchmarks.md, and the numbers of its table, notes and data."""
    numbers = {}
    for record in draw_records.load(directories).values():
        text = json.dumps([record.get(key) for key in ("rows", "notes", "data")], ensure_ascii=False)
        found = [match.replace(",", "") for match in re.findall(r"\d[\d,]*(?:\.\d+)?", text)]
        numbers[draw_records.slug(record["title"])] = found
    return numbers


def held(figure: str, numbers: list[str]) -> bool:
    """Whether one of `numbers`, rounded half up to `figure`'s precision, is `figure`."""
    target = Decimal(figure)
    step = Decimal(1).scaleb(target.as_tuple().exponent)
    for number in numbers:
        try:
            if Decimal(number).quantize(step, rounding=ROUND_HALF_UP) == target:
                return True
        except InvalidOperation:
            continue
    return False


def unheld(page: Path, numbers: dict[str, list[str]]) -> list[tuple[int, list[str], str]]:
    """(line, figures no cited record holds, the block's start) for each failing block of `page`."""
    text = page.read_text(encoding="utf-8")
    references = dict(re.findall(r"^\[([^\]]+)\]: (?:docs/)?benchmarks(?:/\w+)?\.md#([\w-]+)", text, re.M))
    failing, offset = [], 0
    for block in BLOCK.split(text):
        start = text.index(block, offset)
        offset = start + len(block)
        line = text.count("\n", 0, start + len(block) - len(block.lstrip("\n"))) + 1  # its first line of text
        figures = RATIO.findall(block)
        if not figures:
            continue
        cited = re.findall(r"benchmarks(?:/\w+)?\.md#([\w-]+)", block)
        cited += [references[name] for name in re.findall(r"\]\[([^\]]+)\]", block) if name in references]
        pool = [number for anchor in cited for number in numbers.get(anchor, [])]
        missing = [figure for figure in figures if not held(figure, pool)]
        if missing:
            failing.append((line, missing, " ".join(block.split())[:100]))
    return failing


def pages(root: Path = REPOSITORY) -> list[Path]:
    """The guides checked: README.md and docs/*.md, but for SKIPPED."""
    return [
        page
        for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]
        if page.name not in SKIPPED
    ]


def failures(root: Path = REPOSITORY, directories=draw_records.DIRECTORIES) -> list[str]:
    """One line per failing block of the guides under `root`, against the records of `directories`."""
    numbers = records(directories)
    return [
        f"{os.path.relpath(page, root)}:{line}: {', '.join(missing)} held by no cited record: {start}"
        for page in pages(root)
        for line, missing, start in unheld(page, numbers)
    ]


def main() -> None:
    listed = failures()
    for line in listed:
        print(line)
    print(f"{len(listed)} block(s) quote a figure that no record they cite holds")
    sys.exit(1 if listed else 0)


if __name__ == "__main__":
    main()
