"""
`maelmo_declarations.owned_outputs`, the one rule for what a command may replace: a manifest proves an output is the
command's, `--force` removes only what the manifest lists, an output never overlaps an input, and nothing is
written through a link. The commands' own tests apply it to their outputs (export, prepare, Ray).
"""

import json
import os

import pytest

from maelmo_declarations.owned_outputs import (
    MANIFEST,
    check_output,
    manifest_path,
    move_into_place,
    read_manifest,
    remove_listed,
    write_manifest,
)
from maelmo_declarations.refusals import Refusal
from tests import file_tree


def _output(directory, command="maelmo-test", files=("a.bin", "sub/b.json")):
    for name in files:
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)
    write_manifest(str(directory), command)


def test_a_new_path_or_an_empty_folder_is_free_and_a_previous_output_needs_force(tmp_path):
    assert check_output(str(tmp_path / "new"), "maelmo-test", force=False) is None
    (tmp_path / "empty").mkdir()
    assert check_output(str(tmp_path / "empty"), "maelmo-test", force=False) is None
    _output(tmp_path / "out")
    with pytest.raises(Refusal, match="holds a previous output of maelmo-test: give a new path, or --force"):
        check_output(str(tmp_path / "out"), "maelmo-test", force=False)
    manifest = check_output(str(tmp_path / "out"), "maelmo-test", force=True)
    assert manifest == {"format": 1, "command": "maelmo-test", "files": {"a.bin": 5, "sub/b.json": 10}}


@pytest.mark.parametrize(
    "case, message",
    [
        ("no_manifest", "maelmo-test did not write \\(it has no .maelmo-output.json manifest\\)"),
        ("another_command", "the output of maelmo-other, not of maelmo-test"),
        ("added_file", "holds what it did not write or has changed since \\(notes.txt\\)"),
        ("changed_size", "changed since \\(a.bin\\)"),
        ("listed_is_a_link", "changed since \\(a.bin\\)"),
        ("manifest_escapes", "not a manifest this plugin writes"),
        ("manifest_damaged", "not a manifest this plugin writes"),
        ("manifest_is_a_link", "not a manifest this plugin writes \\(a link"),
        ("output_is_a_link", "is a symbolic link"),
        ("output_is_a_file", "is a file, where maelmo-test writes a directory"),
    ],
)
def test_force_replaces_nothing_the_manifest_does_not_prove(tmp_path, case, message):
    out = tmp_path / "out"
    _output(out, command="maelmo-other" if case == "another_command" else "maelmo-test")
    (tmp_path / "secret.txt").write_text("outside the output")
    manifest = out / MANIFEST
    if case == "no_manifest":
        manifest.unlink()
    elif case == "added_file":
        (out / "notes.txt").write_text("the user's")
    elif case == "changed_size":
        (out / "a.bin").write_text("the user's longer text")
    elif case == "listed_is_a_link":
        (out / "a.bin").unlink()
        (out / "a.bin").symlink_to(tmp_path / "secret.txt")
    elif case == "manifest_escapes":
        manifest.write_text(
            json.dumps({"format": 1, "command": "maelmo-test", "files": {"../secret.txt": 18}})
        )
    elif case == "manifest_damaged":
        manifest.write_text("[" * 100_000)
    elif case == "manifest_is_a_link":
        real = tmp_path / "real.json"
        real.write_bytes(manifest.read_bytes())
        manifest.unlink()
        manifest.symlink_to(real)
    elif case == "output_is_a_link":
        os.symlink(out, tmp_path / "link")
        out = tmp_path / "link"
    elif case == "output_is_a_file":
        out = tmp_path / "secret.txt"
    before = file_tree(tmp_path)
    with pytest.raises(Refusal, match=message):
        check_output(str(out), "maelmo-test", force=True)
    assert file_tree(tmp_path) == before


@pytest.mark.parametrize("relation", ["is", "holds", "inside"])
def test_an_output_never_overlaps_an_input(tmp_path, relation):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "corpus.txt").write_text("text")
    given = {"is": "data", "holds": ".", "inside": "data/out"}[relation]
    # `holds`: the parent of the input, which also holds no working directory here.
    output = str(tmp_path / given) if given != "." else str(tmp_path)
    inputs = [str(tmp_path / "data")] if relation != "holds" else [str(tmp_path / "data" / "corpus.txt")]
    expected = {"is": "is the input", "holds": "holds the input", "inside": "lies inside the input"}[relation]
    for force in (False, True):
        with pytest.raises(Refusal, match=expected):
            check_output(output, "maelmo-test", force, inputs=inputs)


@pytest.mark.parametrize("where", ["root", "home", "cwd", "above_cwd"])
def test_the_root_home_and_working_folders_are_refused(tmp_path, monkeypatch, where):
    (tmp_path / "home").mkdir()
    (tmp_path / "work" / "deep").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path / "work" / "deep")
    output = {"root": os.sep, "home": "~", "cwd": ".", "above_cwd": ".."}[where]
    with pytest.raises(Refusal, match="root or home folder, or holds the working directory"):
        check_output(os.path.expanduser(output), "maelmo-test", force=True)


def test_a_file_output_has_its_manifest_beside_it(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("the user's own vocabulary")
    with pytest.raises(Refusal, match="is a file that maelmo-vocab did not write"):
        check_output(str(vocab), "maelmo-vocab", force=True, directory=False)
    vocab.unlink()
    vocab.write_text("[PAD]\n")
    write_manifest(str(vocab), "maelmo-vocab", directory=False)
    assert manifest_path(str(vocab), directory=False) == str(tmp_path / ".vocab.txt.maelmo-output.json")
    assert check_output(str(vocab), "maelmo-vocab", force=True, directory=False) == read_manifest(
        str(vocab), directory=False
    )
    with pytest.raises(Refusal, match="is a directory, where maelmo-vocab writes a file"):
        check_output(str(tmp_path), "maelmo-vocab", force=True, directory=False)


def test_replacing_removes_only_the_listed_files_and_keeps_what_appeared_since(tmp_path):
    _output(tmp_path / "out")
    previous = check_output(str(tmp_path / "out"), "maelmo-test", force=True)
    (tmp_path / "out" / "sub" / "appeared.txt").write_text("written after the check")
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / "new.bin").write_text("new")
    left = move_into_place(str(staging), str(tmp_path / "out"), "maelmo-test", previous)
    assert sorted(os.listdir(tmp_path / "out")) == [MANIFEST, "new.bin"]
    assert read_manifest(str(tmp_path / "out"), True)["files"] == {"new.bin": 3}
    assert len(left) == 1 and file_tree(left[0]) == {"sub/appeared.txt": b"written after the check"}


def test_remove_listed_never_follows_a_link(tmp_path):
    _output(tmp_path / "out", files=("a.bin",))
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "keep.txt").write_text("keep")
    manifest = read_manifest(str(tmp_path / "out"), True)
    (tmp_path / "out" / "a.bin").unlink()
    (tmp_path / "out" / "a.bin").symlink_to(tmp_path / "target" / "keep.txt")
    assert remove_listed(str(tmp_path / "out"), manifest) == []
    assert (tmp_path / "target" / "keep.txt").read_text() == "keep" and not (tmp_path / "out").exists()
