"""
The import graph inside the language models (`maelmo_plugin.lm`), beside the floors between packages
(`layering_test.py`): it has no cycle, so every module can be imported first, whatever imported what before,
and a module's imports say what it builds on (a loop between `loading.py` and `models/pretrained_lm.py`,
through `models/__init__.py`, once held only because the packages happened to be imported in one order); and
the recurrence is imported by its one door, `lm/modules/recurrence/__init__.py`.
"""

import ast
from pathlib import Path

from tests import PROJECT_ROOT

PACKAGE = "maelmo_plugin.lm"
ROOT = PROJECT_ROOT / "maelmo_plugin" / "lm"


def module_name(path: Path) -> str:
    parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(path: Path, name: str) -> set[str]:
    """Every module `path` (the module `name`) imports, at any depth, relative imports resolved; for `from X
    import Y`, both X and X.Y (which is kept only if it is a module)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = node.module or "" if node.level == 0 else ".".join(filter(None, (base, node.module)))
            names.add(module)
            names |= {f"{module}.{alias.name}" for alias in node.names}
    return names


def the_graph() -> dict[str, set[str]]:
    """
    Module -> the modules of `maelmo_plugin.lm` its import runs. Importing `a.b.c` runs the `__init__.py` of
    each package on its path that is not already being imported around the importer (its own packages), so
    `lm/loading.py` importing `lm/models/masked_elmo_lm.py` runs `lm/models/__init__.py` too.
    """
    modules = {module_name(path): path for path in ROOT.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        own = {name.rsplit(".", depth)[0] for depth in range(name.count(".") + 1)}
        edges = set()
        for imported in imported_names(path, name):
            parts = imported.split(".")
            for end in range(1, len(parts) + 1):
                step = ".".join(parts[:end])
                if step in modules and step not in own:
                    edges.add(step)
        graph[name] = edges - {name}
    return graph


def a_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of `graph` as the list of its modules (the first repeated at the end), or [] if none."""
    state: dict[str, str] = {}
    for start in sorted(graph):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = "open"
        while stack:
            following = next(stack[-1], None)
            if following is None:
                state[path.pop()] = "done"
                stack.pop()
            elif state.get(following) == "open":
                return path[path.index(following) :] + [following]
            elif following not in state:
                state[following] = "open"
                path.append(following)
                stack.append(iter(sorted(graph[following])))
    return []


def test_the_graph_finds_the_imports():
    graph = the_graph()
    assert len(graph) > 40
    assert f"{PACKAGE}.models.masked_elmo_lm" in graph[f"{PACKAGE}.loading"]
    # Importing a module of another sub-package runs that package's __init__.py.
    assert f"{PACKAGE}.models" in graph[f"{PACKAGE}.loading"]
    assert a_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert a_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_the_language_models_import_graph_has_no_cycle():
    cycle = a_cycle(the_graph())
    assert not cycle, " -> ".join(cycle)


RECURRENCE = f"{PACKAGE}.modules.recurrence"
# The recurrence's module path in files users already have (re-saved Hugging Face models, docs/hf_export.md):
# these two modules re-export it from there, and must keep naming it.
SHIMS = {"maelmo_plugin.lm.modules.cpu_lstm_recurrence", "maelmo_plugin.hf.cpu_lstm_recurrence"}


def test_the_plugin_imports_the_recurrence_by_its_one_door():
    """Outside `recurrence/`, the plugin imports what it needs of the recurrence from the package itself
    (`recurrence/__init__.py`), never from the file of one of its forms."""
    side_doors = []
    for path in (PROJECT_ROOT / "maelmo_plugin").rglob("*.py"):
        name = module_name(path)
        if name.startswith(RECURRENCE) or name in SHIMS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = []
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            side_doors += [
                f"{name} imports {module}" for module in modules if module.startswith(f"{RECURRENCE}.")
            ]
    assert not side_doors, side_doors
