"""
The import graph of the four packages has floors (docs/design.md's map): `maelmo_declarations` (the standard
library only) under `maelmo_files` (light libraries too, no model) under `maelmo_plugin` under `maelmo_cli`.
No module imports a floor above its own, so there is no cycle between them, the declarations stay cheap to
import and the model-free commands run without torch, AllenNLP or the plugin.
"""

import ast
import sys

import pytest

from tests import PROJECT_ROOT

FLOORS = ("maelmo_declarations", "maelmo_files", "maelmo_plugin", "maelmo_cli")
# What `maelmo_files` may import besides the standard library and the floors under it: the libraries that
# read and write its files, each imported in a few milliseconds.
LIGHT_LIBRARIES = {"tokenizers", "numpy", "h5py"}
# What costs the plugin's start-up (seconds and more than a gigabyte between them).
HEAVY = {"torch", "allennlp", "allennlp_models", "spacy", "transformers"}


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


def test_the_model_free_floor_imports_no_model_library():
    modules = modules_of("maelmo_files")
    imported = {name.split(".")[0] for path in modules for name in imports(path)}
    heavy = sorted(imported & HEAVY)
    allowed = set(sys.stdlib_module_names) | {"maelmo_declarations", "maelmo_files"} | LIGHT_LIBRARIES
    assert len(modules) > 10 and {"tokenizers", "h5py"} <= imported  # the walk finds the modules and imports
    assert not heavy, heavy
    assert imported <= allowed, sorted(imported - allowed)


def test_the_library_imports_each_declaration_by_its_module():
    """No module of the plugin passes a declaration on (`# noqa: F401` re-exports made the old ground floor's
    five back doors); a name the plugin needs from a floor under it is imported from where it is defined."""
    reexports = [
        f"{path.relative_to(PROJECT_ROOT)}:{number}"
        for package in ("maelmo_files", "maelmo_plugin")
        for path in modules_of(package)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if line.startswith(("from maelmo_declarations", "from maelmo_files")) and "noqa: F401" in line
    ]
    assert not reexports, reexports
