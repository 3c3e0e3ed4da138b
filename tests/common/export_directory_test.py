"""
`maelmo_plugin.common.export_directory`: what `maelmo-export` may write over. `--force` replaces a previous
export only, proved by its manifest; every other directory a user could name keeps every file
(docs/bad_inputs.md). These need no model: the checks run before the archive is opened.
`tests/hf/export_test.py` replaces a real export; `tests/cli/owned_outputs_test.py` tests the rule itself.
"""

import os
import subprocess
import sys

import pytest

from maelmo_declarations.owned_outputs import write_manifest
from maelmo_declarations.refusals import Refusal
from maelmo_plugin.common.export_directory import check_export_paths, write_into_place
from tests import file_tree


@pytest.fixture
def archive(tmp_path):
    path = tmp_path / "runs" / "model.tar.gz"
    path.parent.mkdir()
    path.write_bytes(b"an archive")
    return path


def _hf_folder(directory):
    """A Hugging Face model folder by its file names: another model's, or an export."""
    directory.mkdir()
    for name in ("config.json", "model.safetensors", "vocab.txt", "tokenizer.json", "README.md"):
        (directory / name).write_text(name)


def _previous_export(directory):
    _hf_folder(directory)
    write_manifest(str(directory), "maelmo-export")


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize(
    "output, message",
    [
        (".", "holds the working directory"),
        ("..", "holds the working directory"),
        ("~", "root or home folder"),
        ("runs", "holds the input"),
        ("notes", "maelmo-export did not write.*replaces only maelmo-export's own output"),
        ("another_model", "maelmo-export did not write"),
        ("mixed", "holds what it did not write.*\\.git"),
        ("link", "symbolic link"),
        ("a_file", "is a file"),
    ],
)
def test_a_directory_that_is_not_a_previous_export_is_refused_and_kept(
    archive, tmp_path, monkeypatch, force, output, message
):
    work = tmp_path / "work"
    work.mkdir()
    (work / "data.txt").write_text("the user's data")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "diary.txt").write_text("the user's notes")
    _hf_folder(tmp_path / "another_model")
    _previous_export(tmp_path / "mixed")
    (tmp_path / "mixed" / ".git").mkdir()
    (tmp_path / "mixed" / ".git" / "HEAD").write_text("ref: refs/heads/main")
    (tmp_path / "link").symlink_to(tmp_path / "notes")
    (tmp_path / "a_file").write_text("a file")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".bashrc").write_text("the user's settings")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(work)
    target = {"runs": str(archive.parent), "~": str(tmp_path / "home")}.get(output)
    if target is None:
        target = output if output in (".", "..") else str(tmp_path / output)
    before = file_tree(tmp_path)
    with pytest.raises(Refusal, match=message):
        check_export_paths(str(archive), target, force=force)
    assert file_tree(tmp_path) == before


def test_a_previous_export_needs_force(archive, tmp_path):
    _previous_export(tmp_path / "export")
    with pytest.raises(Refusal, match="holds a previous output of maelmo-export.*--force"):
        check_export_paths(str(archive), str(tmp_path / "export"), force=False)
    check_export_paths(str(archive), str(tmp_path / "export"), force=True)
    check_export_paths(str(archive), str(tmp_path / "new"), force=False)
    (tmp_path / "empty").mkdir()
    check_export_paths(str(archive), str(tmp_path / "empty"), force=False)


def test_an_export_a_user_changed_or_another_command_wrote_is_not_replaced(archive, tmp_path):
    _previous_export(tmp_path / "edited")
    (tmp_path / "edited" / "README.md").write_text("the user's own model card, longer than the export's")
    with pytest.raises(Refusal, match="changed since.*README.md"):
        check_export_paths(str(archive), str(tmp_path / "edited"), force=True)
    _hf_folder(tmp_path / "store")
    write_manifest(str(tmp_path / "store"), "maelmo-prepare")
    with pytest.raises(Refusal, match="the output of maelmo-prepare, not of maelmo-export"):
        check_export_paths(str(archive), str(tmp_path / "store"), force=True)


def test_a_failed_export_leaves_the_previous_one_and_no_staging(archive, tmp_path):
    _previous_export(tmp_path / "export")
    before = file_tree(tmp_path)

    def fail(directory):
        (tmp_path / "seen").write_text(directory)
        raise RuntimeError("the check failed")

    with pytest.raises(RuntimeError, match="the check failed"):
        write_into_place(str(archive), str(tmp_path / "export"), True, fail)
    (tmp_path / "seen").unlink()
    assert file_tree(tmp_path) == before
    assert sorted(os.listdir(tmp_path)) == ["export", "runs"]


def test_a_completed_export_replaces_the_previous_one_whole(archive, tmp_path):
    _previous_export(tmp_path / "export")
    write_into_place(
        str(archive),
        str(tmp_path / "export"),
        True,
        lambda d: open(os.path.join(d, "model.onnx"), "w").close(),
    )
    assert sorted(os.listdir(tmp_path)) == ["export", "runs"]
    assert sorted(os.listdir(tmp_path / "export")) == [".maelmo-output.json", "model.onnx"]
    with pytest.raises(Refusal, match="holds a previous output of maelmo-export"):
        check_export_paths(str(archive), str(tmp_path / "export"), force=False)


@pytest.mark.parametrize("output", [".", "notes", "another_model"])
def test_the_command_refuses_in_one_line_and_keeps_the_files(archive, tmp_path, output):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "diary.txt").write_text("the user's notes")
    _hf_folder(tmp_path / "another_model")
    cwd = tmp_path / "notes" if output == "." else tmp_path
    before = file_tree(tmp_path)
    command = [sys.executable, "-m", "maelmo_plugin", "maelmo-export", str(archive), output, "--force"]
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert (
        "working directory" if output == "." else "replaces only maelmo-export's own output"
    ) in result.stderr
    assert file_tree(tmp_path) == before
