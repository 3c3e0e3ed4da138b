"""
`maelmo_plugin.common.export_directory`: what `maelmo-export` may write over. `--force` replaces a previous
export only; every other directory a user could name keeps every file (docs/bad_inputs.md). These need no
model: the checks run before the archive is opened. `tests/hf/export_test.py` replaces a real export.
"""

import os
import subprocess
import sys

import pytest
from allennlp.common.checks import ConfigurationError

from maelmo_plugin.common.export_directory import check_export_paths, write_into_place


@pytest.fixture
def archive(tmp_path):
    path = tmp_path / "runs" / "model.tar.gz"
    path.parent.mkdir()
    path.write_bytes(b"an archive")
    return path


def _previous_export(directory):
    directory.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "README.md"):
        (directory / name).write_text(name)


def _tree(directory):
    return sorted(
        (os.path.relpath(os.path.join(root, name), directory), open(os.path.join(root, name), "rb").read())
        for root, _, names in os.walk(directory)
        for name in names
    )


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize(
    "output, message",
    [
        (".", "working directory or a folder holding it"),
        ("..", "working directory or a folder holding it"),
        ("~", "root or home folder"),
        ("runs", "archive being exported"),
        ("notes", "holds diary.txt, which no export writes.*replaces only a previous export"),
        ("mixed", "holds \\.git, which no export writes"),
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
    before = _tree(tmp_path)
    with pytest.raises(ConfigurationError, match=message):
        check_export_paths(str(archive), target, force=force)
    assert _tree(tmp_path) == before


def test_a_previous_export_needs_force(archive, tmp_path):
    _previous_export(tmp_path / "export")
    with pytest.raises(ConfigurationError, match="holds a previous export.*--force"):
        check_export_paths(str(archive), str(tmp_path / "export"), force=False)
    check_export_paths(str(archive), str(tmp_path / "export"), force=True)
    check_export_paths(str(archive), str(tmp_path / "new"), force=False)
    (tmp_path / "empty").mkdir()
    check_export_paths(str(archive), str(tmp_path / "empty"), force=False)


def test_a_directory_of_export_names_without_a_model_is_not_a_previous_export(archive, tmp_path):
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "README.md").write_text("a user's README")
    with pytest.raises(ConfigurationError, match="holds no exported model"):
        check_export_paths(str(archive), str(tmp_path / "export"), force=True)


def test_a_failed_export_leaves_the_previous_one_and_no_staging(tmp_path):
    _previous_export(tmp_path / "export")
    before = _tree(tmp_path)

    def fail(directory):
        (tmp_path / "seen").write_text(directory)
        raise RuntimeError("the check failed")

    with pytest.raises(RuntimeError, match="the check failed"):
        write_into_place(str(tmp_path / "export"), fail)
    (tmp_path / "seen").unlink()
    assert _tree(tmp_path) == before
    assert sorted(os.listdir(tmp_path)) == ["export"]


def test_a_completed_export_replaces_the_previous_one_whole(tmp_path):
    _previous_export(tmp_path / "export")
    write_into_place(str(tmp_path / "export"), lambda d: open(os.path.join(d, "model.onnx"), "w").close())
    assert sorted(os.listdir(tmp_path)) == ["export"]
    assert os.listdir(tmp_path / "export") == ["model.onnx"]


@pytest.mark.parametrize("output", [".", "notes"])
def test_the_command_refuses_in_one_line_and_keeps_the_files(archive, tmp_path, output):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "diary.txt").write_text("the user's notes")
    cwd = tmp_path / "notes" if output == "." else tmp_path
    before = _tree(tmp_path)
    command = [sys.executable, "-m", "maelmo_plugin", "maelmo-export", str(archive), output, "--force"]
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert ("working directory" if output == "." else "replaces only a previous export") in result.stderr
    assert _tree(tmp_path) == before
