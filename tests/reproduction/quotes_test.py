"""The README and docs/reproduction.md quote the verdicts that `python -m reproduction.draw_report` writes to
reproduction/results/verdicts.json: every 95% interval they give is one the rule computed from the committed results
(a comparison's or a gate's), with the same mean, and the verdict tables name the rule's two words (or its reason
for giving none) before each comparison's interval. A result that changes (a seed retrained, one added) fails here
until the prose follows it."""

import json
import re

import pytest

from maelmo_plugin.arena import verdicts as rule
from reproduction import RESULTS
from tests import PROJECT_ROOT

DOCS = PROJECT_ROOT / "docs"
NUMBER = r"[+−-]?\d+(?:\.\d+)?"
# "+0.3 [-2.7, +3.3]", "−19.6 [−25.2, −14.1]", and a bare "[−25.2, −14.1]"; percentages ("[+27%, +48%]") are
# derived by hand from an interval and are not matched.
INTERVAL = re.compile(rf"(?:({NUMBER}) )?\[({NUMBER}), ({NUMBER})\]")
# Every verdict the rule can give, longest first so that a phrase is found whole.
VERDICTS = sorted(
    [
        f"{direction}, {size}"
        for direction in (rule.SUPPORTS, rule.CONTRADICTS, rule.CANNOT_TELL)
        for size in (rule.AS_LARGE, rule.SMALLER, rule.LARGER, rule.NOT_COMPARABLE)
    ]
    + ["a gate failed", "no verdict", rule.NOT_MEASURED, rule.TOO_FEW],
    key=len,
    reverse=True,
)


def number(text: str) -> float:
    return float(text.replace("−", "-"))


def rounded(value: float) -> float:
    return round(value, 1) + 0.0  # -0.0 reads as +0.0


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


# A line may quote a GLUE reading at the best (dev-chosen) epoch only where it says so.
AT_THE_BEST_EPOCH = re.compile(r"best (?:\(dev-chosen\) )?epoch")


def quoted(intervals: dict, text) -> None:
    """Adds the interval in `text` (a gate's "+2.1 [+0.3, +3.8]"), if any, to `intervals` as (mean, None)."""
    if text:
        match = INTERVAL.search(text)
        intervals[number(match[2]), number(match[3])] = (number(match[1]), None)


def at_the_best_epoch() -> dict:
    """{(low, high): (mean, None)} for each GLUE row's reading at the best (dev-chosen) epoch: its comparison, gates
    and untrained part, which the prose may quote beside the last epoch's, saying so."""
    intervals = {}
    for row in json.loads((RESULTS / "verdicts.json").read_text()):
        best = row.get("best_epoch")
        if best:
            low, high = best["interval"]
            intervals[rounded(low), rounded(high)] = (rounded(best["mean"]), None)
            quoted(intervals, best["untrained_part"])
            for text in (best["gates"] or {}).values():
                quoted(intervals, text)
    return intervals


def computed() -> dict:
    """{(low, high): (mean, verdict)} for every comparison in verdicts.json (GLUE at the last epoch), and (mean,
    None) for every gate, every row's part that needs no pre-training and every failed baseline's untrained
    architecture against the row's arm."""
    rows = json.loads((RESULTS / "verdicts.json").read_text())
    intervals = {}
    for row in rows:
        for by_task in (row["gate"] or {}).values():
            for gate in by_task.values():
                quoted(intervals, gate["interval"])
        quoted(intervals, (row.get("untrained_part") or {}).get("interval"))
        quoted(intervals, (row.get("untrained_baseline") or {}).get("interval"))
        if "interval" in row:
            low, high = row["interval"]
            verdict = next(word for word in VERDICTS if row["verdict"].startswith(word))
            intervals[rounded(low), rounded(high)] = (rounded(row["mean"]), verdict)
    return intervals


def quotes(text: str):
    """Each interval in `text`: (what it reads, its mean or None, (low, high))."""
    for match in INTERVAL.finditer(text):
        yield match[0], (number(match[1]) if match[1] else None), (number(match[2]), number(match[3]))


def test_verdicts_json_has_a_verdict_for_every_claim_the_rule_decides():
    verdicts = computed()
    assert sum(verdict is not None for _, verdict in verdicts.values()) >= 8


@pytest.mark.parametrize("name", ["README.md", "docs/reproduction.md"])
def test_every_quoted_interval_is_one_the_rule_computed(name):
    verdicts, best = computed(), at_the_best_epoch()
    stale = []
    for line_number, line in enumerate((PROJECT_ROOT / name).read_text().splitlines(), 1):
        known = {**best, **verdicts} if AT_THE_BEST_EPOCH.search(line) else verdicts
        for text, mean, bounds in quotes(line):
            if bounds not in known or (mean is not None and mean != known[bounds][0]):
                stale.append(f"{name}:{line_number}: {text}")
    assert not stale, (
        f"not in verdicts.json (redraw with python -m reproduction.draw_report, then quote it): {stale}"
    )


def test_the_readme_names_each_comparisons_verdict_before_its_interval():
    verdicts = computed()
    readme = (PROJECT_ROOT / "README.md").read_text()
    checked = 0
    for row in table(readme, "| claim (paper) | verdict here"):
        for match in INTERVAL.finditer(row):
            _, verdict = verdicts.get((number(match[2]), number(match[3])), (None, None))
            if verdict is None:
                continue  # a gate's interval, or a stale one (the test above names it)
            before = row[: match.start()].replace("[", "")
            said = max(VERDICTS, key=before.rfind)  # the verdict named last before the interval
            assert before.rfind(said) >= 0, f"no verdict named before {match[0]} in: {row[:60]}"
            assert said == verdict, f"{match[0]}: the README says {said!r}, the rule {verdict!r}"
            checked += 1
    assert checked >= 6


def test_the_reports_verdict_table_names_the_rules_verdict():
    verdicts = computed()
    report = (DOCS / "reproduction.md").read_text()
    checked = 0
    for row in table(report, "| claim | paper | ours"):
        cells = row.split(" | ")
        match = INTERVAL.search(cells[2])
        _, verdict = (
            verdicts.get((number(match[2]), number(match[3])), (None, None)) if match else (None, None)
        )
        if verdict is not None:
            assert cells[3].startswith(verdict), f"the report says {cells[3]!r}, the rule {verdict!r}"
            checked += 1
    assert checked >= 8
