"""The README and docs/reproduction.md quote the verdicts that `reproduction/draw_report.py` computes into summary.md:
every 95% interval they give is one the rule computed from the committed results, with the same mean, and the
verdict tables name the rule's verdict beside it. A result that changes (a seed retrained, one added) fails
here until the prose follows it."""

import re

import pytest

from tests import PROJECT_ROOT

DOCS = PROJECT_ROOT / "docs"
NUMBER = r"[+−-]?\d+(?:\.\d+)?"
# "+0.3 [-2.7, +3.3]", "−19.6 [−25.2, −14.1]", and a bare "[−25.2, −14.1]"; percentages ("[+27%, +48%]") are
# derived by hand from an interval and are not matched.
INTERVAL = re.compile(rf"(?:({NUMBER}) )?\[({NUMBER}), ({NUMBER})\]")
VERDICTS = ("supports", "contradicts", "cannot tell")


def number(text: str) -> float:
    return float(text.replace("−", "-"))


def table(text: str, header: str) -> list:
    """The rows of the Markdown table whose header line starts with `header`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def computed() -> dict:
    """{(low, high): (mean, verdict word)} from summary.md's table of verdicts by the rule."""
    summary = (DOCS / "reproduction" / "summary.md").read_text()
    verdicts = {}
    for row in table(summary, "| claim | comparison |"):
        cells = row.split(" | ")
        match = INTERVAL.search(cells[4])
        word = next(word for word in VERDICTS if cells[5].startswith(f"**{word}"))
        verdicts[number(match[2]), number(match[3])] = (number(match[1]), word)
    return verdicts


def quotes(text: str):
    """Each interval in `text`: (what it reads, its mean or None, (low, high))."""
    for match in INTERVAL.finditer(text):
        yield match[0], (number(match[1]) if match[1] else None), (number(match[2]), number(match[3]))


def test_summary_has_a_verdict_for_every_claim_the_rule_decides():
    assert len(computed()) >= 10  # the parser reads the table it quotes from


@pytest.mark.parametrize("name", ["README.md", "docs/reproduction.md"])
def test_every_quoted_interval_is_one_the_rule_computed(name):
    verdicts = computed()
    stale = []
    for line_number, line in enumerate((PROJECT_ROOT / name).read_text().splitlines(), 1):
        for text, mean, bounds in quotes(line):
            if bounds not in verdicts or (mean is not None and mean != verdicts[bounds][0]):
                stale.append(f"{name}:{line_number}: {text}")
    assert not stale, (
        f"not in summary.md's verdicts (redraw with reproduction/draw_report.py, then quote it): {stale}"
    )


def test_the_readme_names_each_intervals_verdict_before_it():
    verdicts = computed()
    readme = (PROJECT_ROOT / "README.md").read_text()
    rows = table(readme, "| claim (paper) | verdict here")
    checked = 0
    for row in rows:
        for match in INTERVAL.finditer(row):
            if (number(match[2]), number(match[3])) not in verdicts:
                continue  # the test above names it
            before = row[: match.start()]
            said = max(VERDICTS, key=before.rfind)  # the verdict named last before the interval
            assert before.rfind(said) >= 0, f"no verdict named before {match[0]} in: {row[:60]}"
            assert said == verdicts[number(match[2]), number(match[3])][1], f"{match[0]} in: {row[:60]}"
            checked += 1
    assert checked >= 8


def test_the_reports_verdict_table_names_the_rules_verdict():
    verdicts = computed()
    report = (DOCS / "reproduction.md").read_text()
    checked = 0
    for row in table(report, "| claim | paper | ours"):
        cells = row.split(" | ")
        match = INTERVAL.search(cells[2])
        if match and (number(match[2]), number(match[3])) in verdicts:
            assert cells[3].startswith(verdicts[number(match[2]), number(match[3])][1]), row[:60]
            checked += 1
    assert checked >= 10
