"""
The import graph of the three packages has floors (docs/design.md's map): `maelmo_declarations` (the standard
library only) under `maelmo_plugin` under `maelmo_cli`. No module imports a floor above its own, so there is no
cycle between them and the declarations stay cheap to import.
"""

import ast
import sys

import pytest

from tests import PROJECT_ROOT

FLOORS = ("maelmo_declarations", "maelmo_plugin", "maelmo_cli")


def imports(path):
    """Every module `path` imports, at any depth (a function-level import counts: it runs too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def modules_of(package):
    return sorted((PROJECT_ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("floor", FLOORS)
def test_no_module_imports_a_floor_above_its_own(floor):
    above = FLOORS[FLOORS.index(floor) + 1 :]
    upward = {
        f"{path.relative_to(PROJECT_ROOT)} imports {name}"
        for path in modules_of(floor)
        for name in imports(path)
        if name.split(".")[0] in above
    }
    assert not upward, sorted(upward)


def test_the_declarations_import_only_the_standard_library_and_themselves():
    allowed = set(sys.stdlib_module_names) | {"maelmo_declarations"}
    foreign = {
        f"{path.relative_to(PROJECT_ROOT)} imports {name}"
        for path in modules_of("maelmo_declarations")
        for name in imports(path)
        if name.split(".")[0] not in allowed
    }
    assert len(modules_of("maelmo_declarations")) > 10  # the walk finds the modules
    assert not foreign, sorted(foreign)


def test_the_library_imports_each_declaration_by_its_module():
    """No module of the plugin passes a declaration on (`# noqa: F401` re-exports made the old ground floor's
    five back doors); a name the plugin needs from the declarations is imported from where it is defined."""
    reexports = [
        f"{path.relative_to(PROJECT_ROOT)}:{number}"
        for path in modules_of("maelmo_plugin")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if line.startswith("from maelmo_declarations") and "noqa: F401" in line
    ]
    assert not reexports, reexports
