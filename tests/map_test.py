"""docs/design.md's "Where each piece lives" is the one map of the package: every module and every registered name."""

import re

from tests import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "maelmo_plugin"
PACKAGES = (PACKAGE, *(PROJECT_ROOT / name for name in ("maelmo_declarations", "maelmo_files", "maelmo_cli")))


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


def test_everything_the_map_names_is_there():
    """The map checked the other way: a module, folder or file it names that is gone fails (a moved folder once
    stayed on it)."""
    import subprocess

    listed = subprocess.run(
        ["git", "ls-files"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=False
    )
    files = set(listed.stdout.splitlines()) if listed.returncode == 0 else set()
    files |= {str(path.relative_to(PROJECT_ROOT)) for package in PACKAGES for path in package.rglob("*.py")}
    names = {path.rsplit("/", 1)[-1] for path in files}
    folders = {path.rsplit("/", 1)[0] + "/" for path in files if "/" in path}
    folders |= {folder[: index + 1] for folder in folders for index, char in enumerate(folder) if char == "/"}
    tops = {path.split("/", 1)[0] for path in files if "/" in path}
    missing = []
    for token in set(re.findall(r"`([\w./-]+)`", the_map())):
        if token.endswith(".py") and "/" not in token and token not in names:
            missing.append(token)
        elif "/" in token and token.split("/", 1)[0] in tops:
            if token not in files and (token.rstrip("/") + "/") not in folders:
                missing.append(token)
    assert len(names) > 100 and not sorted(missing), (
        f"named on docs/design.md's map but not in the tree: {missing}"
    )
