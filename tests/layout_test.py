"""The repository's layout: docs/ holds pages and figures only, result data lives beside the runner that wrote it,
scripts/ reaches the repository's packages without sys.path, and each top folder says in its README what lives there."""

import re
import subprocess

import pytest

from tests import PROJECT_ROOT


def tracked(folder: str) -> list:
    """The files git tracks under `folder` (the working tree's, so that a moved file counts where it is now)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", folder],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    return [line for line in listed.stdout.splitlines() if (PROJECT_ROOT / line).exists()]


def test_docs_holds_pages_and_figures_only():
    data = [path for path in tracked("docs") if not path.endswith((".md", ".png", ".svg"))]
    assert not data, (
        f"result data under docs/ (move it beside its runner, e.g. reproduction/results/): {data}"
    )


def test_scripts_import_the_repository_without_sys_path():
    hacks = [path for path in tracked("scripts") if "sys.path.insert" in (PROJECT_ROOT / path).read_text()]
    assert not hacks, f"run as a module from the repository root (python -m ...) instead: {hacks}"


def test_no_docs_page_is_over_500_lines():
    """A page longer than that is split or said more briefly (the drawn benchmark record is four pages)."""
    lengths = {
        page.relative_to(PROJECT_ROOT).as_posix(): len(page.read_text(encoding="utf-8").splitlines())
        for page in (PROJECT_ROOT / "docs").rglob("*.md")
    }
    assert len(lengths) > 20 and "docs/benchmarks/embedding.md" in lengths
    assert not {page: lines for page, lines in lengths.items() if lines > 500}


@pytest.mark.parametrize("folder", ["scripts", "examples", "reproduction", "benchmarks"])
def test_each_folder_has_a_readme(folder):
    assert (PROJECT_ROOT / folder / "README.md").is_file()


def test_the_scripts_the_docs_run_exist():
    """`python <folder>/<script>.py` in the README, docs/ or a folder's README names a file that is there (a
    moved script leaves no stale command behind); a bare `python script.py` is the reader's own copy."""
    pages = [
        PROJECT_ROOT / "README.md",
        *(PROJECT_ROOT / "docs").rglob("*.md"),
        *PROJECT_ROOT.glob("*/README.md"),
    ]
    named = {
        (page.relative_to(PROJECT_ROOT).as_posix(), script)
        for page in pages
        for script in re.findall(r"python3? ([\w./-]+/[\w-]+\.py)\b", page.read_text(encoding="utf-8"))
    }
    assert len(named) > 20  # the search finds the commands
    missing = sorted((page, script) for page, script in named if not (PROJECT_ROOT / script).is_file())
    assert not missing, f"commands that run a script that is not there: {missing}"


def test_the_encoder_is_a_registrable_choice_with_the_built_in_encoders_under_it():
    """The language models take a registrable `LmEncoder` (docs/encoders.md): a config chooses by "type"."""
    import inspect

    from allennlp.common import Registrable

    import maelmo_plugin  # noqa: F401  (registers the classes)
    from maelmo_plugin.lm.models.elmo_lm import ElmoLanguageModel
    from maelmo_plugin.lm.models.masked_elmo_lm import MaskedElmoLanguageModel
    from maelmo_plugin.lm.modules.lm_encoder import LmEncoder

    assert Registrable in LmEncoder.__bases__
    registered = set(LmEncoder.list_available())
    assert {"maelmo_masked_elmo", "maelmo_elmo_bilm", "maelmo_transformer", "maelmo_seq2seq"} <= registered
    for model in (MaskedElmoLanguageModel, ElmoLanguageModel):
        assert inspect.signature(model.__init__).parameters["encoder"].annotation is LmEncoder
