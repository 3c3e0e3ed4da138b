"""
Checks that every ratio the guides quote (README.md and docs/*.md, but for the drawn benchmark pages, the
history and the reproduction's pages, which tests/reproduction checks) is the record field it cites. A figure
is a number followed by "x" or " times" ("1.98x", "608x", "2 times"; a range, "1.41-1.44x", is two figures),
outside code. It is the text of a link to its record's section, whose title names the field:

    [1.76x](benchmarks/pretraining_cpu.md#encoder-forward--backward-against-allennlps-elmolstm-cpu
      "encoder_speed: quiet machine; 512/2048 > Masked ELMo over torch's CPU LSTM")

The title is the record's name (its file's stem), ": ", then the row, named by its first cells in order,
separated by "; " (each a whole cell, or its beginning up to a space, comma, colon, semicolon or parenthesis),
" > " and the column's header; " #2" after the header takes the cell's second number ("2.28x, 1.94x"). A data
field is "record: data > key > key". A link whose text holds several figures names one field for each, in order,
separated by " & ". A reference link ([1.76x][label], the title in `[label]: url "title"`, on the same line or
the next) cites the same way; a title with a double quote is written in single quotes, or escapes it (\\").

The figure is compared with the field's first number (or the #N-th) at the figure's printed precision, rounded
half up: 1.755 is "1.76x" and "1.8x", not "1.75x". A figure fails, one line each with its file and line, where
it cites no field, where the field is not there (no such record, column, row or key, or a row that several
match), where the link does not lead to that record's section, where it is not the field's value, and where it
is more precise than the field. A figure computed from two fields is not typed into a record: the record
computes it (draw_records.py, "computed"). Exit status 1 while any figure fails;
tests/benchmarks/guide_figures_test.py runs the same check. Standard library only.

    .venv/bin/python benchmarks/guide_figures.py
"""

import os
import posixpath
import re
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import draw_records

REPOSITORY = Path(__file__).resolve().parents[1]
SKIPPED = {"benchmarks.md", "performance_history.md", "reproduction.md"}

_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
FIGURE = re.compile(rf"(?<![\w.,])({_NUMBER})(?:(?:-|–| to )({_NUMBER}))?(?:x\b| times\b)")
_TITLE = r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'"
INLINE = re.compile(rf"\[([^\[\]]*)\]\(\s*([^\s()]+)(?:\s+({_TITLE}))?\s*\)")
REFERENCE = re.compile(r"\[([^\[\]]*)\]\[([^\[\]]+)\]")
DEFINITION = re.compile(
    rf"^ {{0,3}}\[([^\[\]]+)\]:[ \t]*(\S+)(?:(?:[ \t]+|[ \t]*\n[ \t]*)({_TITLE}))?[ \t]*$", re.M
)
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE = re.compile(r"`[^`\n]*`")


def label(name: str) -> str:
    return " ".join(name.lower().split())


def unquote(title: str) -> str:
    """A link title's text: quotes and escapes taken off, a title wrapped over lines joined."""
    return " ".join(re.sub(r"\\(.)", r"\1", title[1:-1]).split()) if title else ""


def blank(text: str, spans) -> str:
    """`text` with each (start, end) span's characters but newlines replaced by spaces."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = [char if char == "\n" else " " for char in text[start:end]]
    return "".join(chars)


def links(text: str) -> tuple[list, str]:
    """([(text start, text end, url, title)] of every link, `text` with what a reader does not see as prose,
    code, link targets and reference definitions, blanked)."""
    shown = blank(text, [match.span() for match in FENCE.finditer(text)])
    definitions = {}
    for match in DEFINITION.finditer(shown):
        definitions.setdefault(label(match[1]), (match[2], unquote(match[3])))
    shown = blank(shown, [match.span() for match in DEFINITION.finditer(shown)])
    found = [(*match.span(1), match[2], unquote(match[3])) for match in INLINE.finditer(shown)]
    shown = blank(shown, [(match.end(1), match.end()) for match in INLINE.finditer(shown)])
    for match in REFERENCE.finditer(shown):
        url, title = definitions.get(label(match[2]), ("", ""))
        found.append((*match.span(1), url, title))
    shown = blank(shown, [(match.end(1), match.end()) for match in REFERENCE.finditer(shown)])
    return found, blank(shown, [match.span() for match in CODE.finditer(shown)])


def value(field: str, records: dict) -> tuple[str, str]:
    """(the record's name, the number `field` names, as written); ValueError saying why there is none."""
    name, _, path = field.partition(": ")
    if name not in records:
        raise ValueError(f"no record named {name!r}")
    record = records[name]
    if path.startswith("data > "):
        found = record["data"]
        for key in path.split(" > ")[1:]:
            if not isinstance(found, dict) or key not in found:
                raise ValueError(f"no data key {key!r} in {name}")
            found = found[key]
        written = [repr(found)] if isinstance(found, (int, float)) and not isinstance(found, bool) else []
    else:
        row, _, column = path.rpartition(" > ")
        column, hash_sign, nth = column.partition(" #")
        if hash_sign and not (nth.isdigit() and int(nth) > 0):
            raise ValueError(f"#{nth} is not the place of a number in a cell")
        if column not in record["header"]:
            raise ValueError(f"no column {column!r} in {name}")
        cell = record["rows"][draw_records.find_row(record, row)][record["header"].index(column)]
        written = draw_records.NUMBER.findall(str(cell))
        written = written[int(nth) - 1 : int(nth)] if hash_sign else written[:1]
    if not written:
        raise ValueError(f"no number in {name}'s field {path!r}")
    return name, written[0].replace(",", "")


def mismatch(figure: str, number: str) -> str:
    """Why `figure` ("1.76x") is not `number` at `figure`'s precision, rounded half up ("" where it is)."""
    shown, held = Decimal(draw_records.NUMBER.findall(figure)[0].replace(",", "")), Decimal(number)
    if shown.as_tuple().exponent < held.as_tuple().exponent:
        return "is more precise than"
    step = Decimal(1).scaleb(shown.as_tuple().exponent)
    return "" if held.quantize(step, rounding=ROUND_HALF_UP) == shown else "is not"


def check(page: Path, root: Path, records: dict, where: dict) -> list[tuple[int, str]]:
    """(line, why) for each figure of `page` that fails the field it cites."""
    text = page.read_text(encoding="utf-8")
    found, shown = links(text)
    failing = []
    cited: dict[tuple, list] = {}
    for match in FIGURE.finditer(shown):
        suffix = "x" if match[0].endswith("x") else " times"
        for group in (1, 2):
            if match[group] is None:
                continue
            start = match.start(group)
            line, figure = text.count("\n", 0, start) + 1, match[group] + suffix
            link = next((link for link in found if link[0] <= start < link[1]), None)
            if link is None or not link[3]:
                failing.append((line, f"{figure} cites no field"))
            else:
                cited.setdefault(link, []).append((line, figure))
    for (_, _, url, title), figures in cited.items():
        fields = [field.strip() for field in title.split(" & ")]
        if len(fields) != len(figures):
            line = figures[0][0]
            failing.append((line, f"{len(figures)} figure(s) but {len(fields)} field(s) in {title!r}"))
            continue
        target = posixpath.normpath(posixpath.join(page.parent.relative_to(root).as_posix(), url))
        for (line, figure), field in zip(figures, fields):
            try:
                name, number = value(field, records)
            except ValueError as error:
                failing.append((line, f"{figure} cites {field!r}: {error}"))
                continue
            if target != where[name]:
                failing.append((line, f"{figure} cites {name} but links {url}, not {where[name]}"))
            elif mismatch(figure, number):
                failing.append((line, f"{figure} {mismatch(figure, number)} {field} ({number})"))
    return sorted(failing)


def pages(root: Path = REPOSITORY) -> list[Path]:
    """The guides checked: README.md and docs/*.md, but for SKIPPED."""
    return [
        page
        for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]
        if page.name not in SKIPPED and page.is_file()
    ]


def failures(root: Path = REPOSITORY, directories=draw_records.DIRECTORIES) -> list[str]:
    """One line per failing figure of the guides under `root`, against the records of `directories`."""
    records = draw_records.load(directories)
    where = draw_records.locations(records)
    return [
        f"{os.path.relpath(page, root)}:{line}: {why}"
        for page in pages(root)
        for line, why in check(page, root, records, where)
    ]


def figures(root: Path = REPOSITORY) -> int:
    """How many figures the guides under `root` quote."""
    return sum(
        1 + (match[2] is not None)
        for page in pages(root)
        for match in FIGURE.finditer(links(page.read_text("utf-8"))[1])
    )


def main() -> None:
    listed = failures()
    for line in listed:
        print(line)
    print(f"{len(listed)} of {figures()} figures fail the record field they cite")
    sys.exit(1 if listed else 0)


if __name__ == "__main__":
    main()
