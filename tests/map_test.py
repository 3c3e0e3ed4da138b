"""docs/design.md's "Where each piece lives" is the one map of the package: every module and every registered name."""

import re

from tests import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "maelmo_plugin"
PACKAGES = (PACKAGE, PROJECT_ROOT / "maelmo_declarations", PROJECT_ROOT / "maelmo_cli")


def the_map() -> str:
    design = (PROJECT_ROOT / "docs" / "design.md").read_text()
    start = design.index("## Where each piece lives")
    end = design.index("\n## ", start + 1)
    return design[start:end]


def test_every_module_is_on_the_map():
    text = the_map()
    modules = [path for package in PACKAGES for path in package.rglob("*.py") if path.name != "__init__.py"]
    modules += sorted(PROJECT_ROOT.glob("maelmo_*.py"))  # top-level modules (the interpreter-start hook)
    missing = [str(path.relative_to(PROJECT_ROOT)) for path in modules if path.name not in text]
    assert not missing, f"not on docs/design.md's map: {missing}"


def test_every_registered_name_is_on_the_map():
    text = the_map()
    names = set()
    for path in PACKAGE.rglob("*.py"):
        names |= set(re.findall(r'\.register\(\s*"(maelmo[_-]\w[\w-]*)"', path.read_text()))
    assert len(names) > 20  # the search finds the registrations
    missing = sorted(name for name in names if f"`{name}`" not in text and f"allennlp {name}" not in text)
    assert not missing, f"registered but not on docs/design.md's map: {missing}"
