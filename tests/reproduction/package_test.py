"""reproduction/ is one package whose modules import each other one way: no cycle, no sibling found by sys.path."""

import ast

from tests import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "reproduction"


def imports() -> dict:
    """{module: the package's modules it imports}."""
    graph = {}
    for path in PACKAGE.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "reproduction":
                found |= {alias.name for alias in node.names if (PACKAGE / f"{alias.name}.py").exists()}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("reproduction."):
                found.add(node.module.split(".")[1])
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = (
                    [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module]
                )
                siblings = [name for name in names if name and (PACKAGE / f"{name}.py").exists()]
                assert not siblings, f"{path.name} imports {siblings} as top-level modules"
        graph[path.stem] = found
    return graph


def test_the_package_has_no_import_cycle():
    graph = imports()
    assert graph["runner"] >= {"campaigns", "data"}
    assert graph["campaigns"] == {"arena", "fine_tuning", "lm_runs", "probe", "tuning"}

    def visit(module, path):
        for imported in graph.get(module, ()):
            assert imported not in path, f"import cycle: {' -> '.join([*path, imported])}"
            visit(imported, [*path, imported])

    for module in graph:
        visit(module, [module])
