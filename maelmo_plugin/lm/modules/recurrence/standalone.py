"""
The CPU training recurrence as one Python file that imports only torch: what the Hugging Face export ships as
`cpu_lstm_recurrence.py`, beside `modeling_masked_elmo.py`, which runs it on a CPU (`hf/export.py`).

One file, because transformers' custom-code loader copies the files a model file imports relatively, but not
the files those import. So the files the recurrence is made of (`SOURCES`, each importing only torch, the
standard library and the sources before it) are joined: the docstring of the last (`cpu.py`), every import
of the standard library and torch once, then each file's code after its imports, in order.
"""

import ast
import sys
from pathlib import Path

FOLDER = Path(__file__).parent
# Each after the files it imports.
SOURCES = ("layer.py", "cpu_arithmetic.py", "cpu.py")
# How the sources import each other, left out of the joined file.
OWN_PACKAGE = "maelmo_plugin"


def standalone_source() -> str:
    """The joined file's text (the same bytes for the same sources)."""
    imports: list[str] = []
    bodies = []
    docstring = ""
    for name in SOURCES:
        text = (FOLDER / name).read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        statements = ast.parse(text).body
        has_docstring = isinstance(statements[0], ast.Expr) and isinstance(statements[0].value, ast.Constant)
        if has_docstring:
            docstring = "".join(lines[: statements[0].end_lineno])
            statements = statements[1:]
        header = [node for node in statements if isinstance(node, (ast.Import, ast.ImportFrom))]
        if statements[: len(header)] != header:
            raise ValueError(f"{name}: the imports must come first, before any other statement")
        for node in header:
            segment = "".join(lines[node.lineno - 1 : node.end_lineno])
            module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            own = (module or "").split(".")[0] == OWN_PACKAGE
            if not own and segment not in imports:
                imports.append(segment)
        end = header[-1].end_lineno if header else (statements[0].lineno - 1)
        bodies.append(f"# {'-' * 40} from {name}\n" + "".join(lines[end:]).strip("\n") + "\n")
    generated = (
        f"# Joined from {', '.join(SOURCES)} of maelmo_plugin/lm/modules/recurrence/ by its standalone.py.\n"
    )
    # The standard library's first, then torch's, as isort orders them.
    imports.sort(
        key=lambda segment: (segment.split()[1].split(".")[0] not in sys.stdlib_module_names, segment)
    )
    return docstring + "\n" + generated + "".join(imports) + "\n\n" + "\n\n".join(bodies)
