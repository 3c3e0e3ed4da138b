"""
The one rule for what a command may replace, used by every command that writes (standard library only, so that
the `maelmo` command applies it before it imports AllenNLP).

* **An output carries its manifest.** What a command creates is recorded in a small JSON file, the *manifest*,
  naming the command and every file it wrote: `DIR/.maelmo-output.json` for a directory output (an export, a
  token store, Ray's Parquet folder), `.NAME.maelmo-output.json` beside a file output (`vocab.txt`, an HDF5 file).
* **`--force` replaces only what its manifest proves the same kind of command wrote**, and removes only the
  files that manifest lists. File names never decide it: a folder of the user's, another model's Hugging Face
  folder or an output written before manifests existed has no manifest, and is refused, `--force` included,
  with the fix (a new path, or removing it by hand). A listed file whose size changed, or anything in the
  folder the manifest does not list, is the user's: refused too.
* **An output never overlaps an input.** An output that is, contains or lies inside one of the command's inputs
  is refused, `--force` included; so are `/`, the home folder and a folder holding the working directory.
* **Nothing is written through a link.** A symbolic link at the output, or at a manifest, is refused.

`check_output` says whether an output may be written (and returns the manifest `--force` replaces);
`write_manifest` records a finished output; `remove_listed` removes what a manifest lists, and nothing else.
"""

import json
import os
from collections.abc import Iterable, Sequence
from typing import Any, Optional

from maelmo_declarations.refusals import Refusal

MANIFEST = ".maelmo-output.json"
FORMAT = 1
# A manifest is a few hundred bytes per file listed; a bigger one is not ours.
_MAX_MANIFEST_BYTES = 16 * 1024 * 1024


PARTIAL_SUFFIX = ".partial"


def partial_path(output: str) -> str:
    """Where the output is written until it is complete: beside it, so that the final move is a rename."""
    return output + PARTIAL_SUFFIX


def check_output_path(output: str, force: bool, example: str = "output.txt") -> None:
    """
    Refuses an output that cannot be written, before any work is done: a directory, a missing or unwritable
    parent directory, or an existing file without `force`. `example` is a file name to suggest inside a
    directory.
    """
    if os.path.isdir(output):
        raise Refusal(
            f"The output {output} is a directory: give the path of the file to write, e.g. "
            f"{os.path.join(output, example)}."
        )
    parent = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(parent):
        what = "is not a directory" if os.path.exists(parent) else "does not exist"
        raise Refusal(
            f"Cannot write {output}: its directory {parent} {what}. Create it (mkdir -p {parent}) or give "
            f"another output path."
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise Refusal(
            f"Cannot write {output}: its directory {parent} is not writable by this user. Give an output "
            f"path in a directory you can write to."
        )
    if os.path.lexists(output) and not force:
        raise Refusal(f"{output} exists; give --force to replace it.")


def manifest_path(output: str, directory: bool) -> str:
    """Where the manifest of `output` lives: inside a directory output, beside a file output."""
    if directory:
        return os.path.join(output, MANIFEST)
    parent, name = os.path.split(os.path.abspath(output))
    return os.path.join(parent, f".{name}{MANIFEST}")


def check_output(
    output: str,
    command: str,
    force: bool,
    inputs: Sequence[str] = (),
    directory: bool = True,
    option: str = "The output",
    force_flag: str = "--force",
) -> Optional[dict[str, Any]]:
    """
    Refuses, in one line naming the path and the fix (a `Refusal`), an `output` that `command` may not write;
    returns the manifest of a previous output of `command` that `force` lets it replace, or of an unfinished one
    it continues (`"complete": false`, with or without `force`), or None where there is nothing to replace (the
    path is free, or an empty directory). `inputs` are every path the command reads.
    `directory` says whether the output is a directory (else a file); `option` names it in messages, and
    `force_flag` the command's option that forces (`-f` for `allennlp train`).
    """
    shown = f"{option} {output!r}"
    if os.path.islink(output):
        raise Refusal(f"{shown} is a symbolic link: give the path to write itself, a new one.")
    if directory and os.path.lexists(output) and not os.path.isdir(output):
        raise Refusal(f"{shown} is a file, where {command} writes a directory: give a directory path.")
    if not directory and os.path.isdir(output):
        raise Refusal(
            f"{shown} is a directory, where {command} writes a file: give a file path, e.g. "
            f"{os.path.join(output, 'output')!r}."
        )
    _check_overlap(output, inputs, shown, command)
    if not os.path.lexists(output):
        return None
    if directory and not os.listdir(output):
        return None
    manifest = read_manifest(output, directory)
    if manifest is None:
        what = "a folder" if directory else "a file"
        raise Refusal(
            f"{shown} exists and is {what} that {command} did not write (it has no {MANIFEST} manifest): "
            f"{force_flag} replaces only {command}'s own output. Give a new path, or remove it yourself."
        )
    if manifest["command"] != command:
        raise Refusal(
            f"{shown} is the output of {manifest['command']}, not of {command}: give a new path, or remove it "
            f"yourself."
        )
    if not manifest.get("complete", True):
        return manifest  # the command's own unfinished output, which it continues: what it wrote is not listed yet
    foreign = _foreign_entries(output, manifest, directory)
    if foreign:
        raise Refusal(
            f"{shown} is {command}'s output, but holds what it did not write or has changed since "
            f"({', '.join(foreign[:5])}{' and more' if len(foreign) > 5 else ''}): move those away, or give a "
            f"new path."
        )
    if not force:
        raise Refusal(
            f"{shown} holds a previous output of {command}: give a new path, or {force_flag} to replace it."
        )
    return manifest


def _check_overlap(output: str, inputs: Iterable[str], shown: str, command: str) -> None:
    target = os.path.realpath(output)
    protected = {os.path.realpath(os.sep), os.path.realpath(os.path.expanduser("~"))}
    if target in protected or _within(os.path.realpath(os.getcwd()), target):
        raise Refusal(
            f"{shown} is the root or home folder, or holds the working directory: {command} needs an output of "
            f"its own. Give a new path, e.g. {os.path.join(output, 'out')!r}."
        )
    for path in inputs:
        if not path or not os.path.lexists(path):
            continue
        source = os.path.realpath(path)
        if _within(source, target) or _within(target, source):
            relation = "is" if source == target else "holds" if _within(source, target) else "lies inside"
            raise Refusal(
                f"{shown} {relation} the input {path!r}: an output never overlaps what the command reads. Give "
                f"another path."
            )


def _within(path: str, directory: str) -> bool:
    """Whether `path` is `directory` or inside it (both real paths)."""
    return os.path.commonpath([path, directory]) == directory


def read_manifest(output: str, directory: bool) -> Optional[dict[str, Any]]:
    """
    The manifest of `output`, or None where there is none; a `Refusal` for one that cannot be ours (a link, too
    big, not the format, a listed name that leaves its folder).
    """
    path = manifest_path(output, directory)
    if not os.path.lexists(path):
        return None
    if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > _MAX_MANIFEST_BYTES:
        raise Refusal(
            f"{path} is not a manifest this plugin writes (a link, not a file, or too big): remove it."
        )
    try:
        with open(path, encoding="utf-8") as stream:
            manifest = json.load(stream)
        files = manifest["files"]
        valid = (
            manifest.get("format") == FORMAT
            and isinstance(manifest.get("command"), str)
            and isinstance(manifest.get("complete", True), bool)
            and isinstance(files, dict)
            and all(_safe_name(name) and isinstance(size, int) and size >= 0 for name, size in files.items())
        )
    except (ValueError, KeyError, TypeError, RecursionError, UnicodeDecodeError):
        valid = False
    if not valid:
        raise Refusal(f"{path} is not a manifest this plugin writes (damaged, or another format): remove it.")
    return manifest


def _safe_name(name: Any) -> bool:
    """A listed file's name: relative, inside its folder, with no '..' and no empty or '.' part."""
    if not isinstance(name, str) or not name or name.startswith("/") or "\\" in name or "\0" in name:
        return False
    return all(part not in ("", ".", "..") for part in name.split("/"))


def _foreign_entries(output: str, manifest: dict[str, Any], directory: bool) -> list[str]:
    """What is at `output` that the manifest does not account for: an unlisted entry, a link, a changed size."""
    root = output if directory else os.path.dirname(os.path.abspath(output))
    listed = manifest["files"]
    foreign = []
    for name, size in sorted(listed.items()):
        path = os.path.join(root, name)
        if os.path.lexists(path) and (
            os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) != size
        ):
            foreign.append(name)
    if not directory:
        if os.path.basename(output) not in listed:
            foreign.append(os.path.basename(output))
        return foreign
    for parent, folders, files in os.walk(output):
        for name in [*folders, *files]:
            path = os.path.join(parent, name)
            relative = os.path.relpath(path, output).replace(os.sep, "/")
            if relative == MANIFEST or relative in listed:
                continue
            if (
                name in folders
                and not os.path.islink(path)
                and any(key.startswith(relative + "/") for key in listed)
            ):
                continue
            foreign.append(relative)
    return foreign


def write_manifest(
    output: str,
    command: str,
    directory: bool = True,
    files: Optional[Iterable[str]] = None,
    complete: bool = True,
) -> None:
    """
    Records `output` as `command`'s: every file under a directory output (or `files`, relative to it), or the
    one file output; written aside and renamed, so a manifest is whole or absent. `complete` False claims a
    directory a job is still writing (Ray's), which `check_output` then lets the same command continue.
    """
    if directory:
        if files is None:
            files = [
                os.path.relpath(os.path.join(parent, name), output).replace(os.sep, "/")
                for parent, _folders, names in os.walk(output)
                for name in names
            ]
        root = output
    else:
        files, root = [os.path.basename(output)], os.path.dirname(os.path.abspath(output))
    listed = {name: os.path.getsize(os.path.join(root, name)) for name in sorted(files) if name != MANIFEST}
    path = manifest_path(output, directory)
    partial = f"{path}.{os.getpid()}.tmp"
    with open(partial, "w", encoding="utf-8") as stream:
        record = {"format": FORMAT, "command": command, "files": listed}
        json.dump(record if complete else {**record, "complete": False}, stream, indent=1)
    os.replace(partial, path)


def remove_listed(output: str, manifest: dict[str, Any], directory: bool = True) -> list[str]:
    """
    Removes the files `manifest` lists (a link at a listed name is removed itself, never followed), then the
    folders they leave empty, then the manifest; returns what it left because it was not listed.
    """
    root = output if directory else os.path.dirname(os.path.abspath(output))
    for name in manifest["files"]:
        path = os.path.join(root, name)
        if os.path.islink(path) or os.path.isfile(path):
            os.remove(path)
    for name in sorted(manifest["files"], key=lambda name: -name.count("/")):
        folder = os.path.dirname(name)
        while folder:
            try:
                os.rmdir(os.path.join(root, folder))
            except OSError:
                break
            folder = os.path.dirname(folder)
    path = manifest_path(output, directory)
    if os.path.lexists(path):
        os.remove(path)
    if directory and os.path.isdir(output):
        left = sorted(os.listdir(output))
        if not left:
            os.rmdir(output)
        return left
    return []


def move_into_place(staging: str, output: str, command: str, previous: Optional[dict[str, Any]]) -> list[str]:
    """
    Moves the finished directory `staging` (beside `output`, on its file system) to `output`, with its manifest.
    `previous` is what `check_output` returned: the old output is renamed aside first, and only the files its
    manifest lists are removed from it once the new one is in place. Returns the path of what was left aside
    because it was not listed (someone wrote into the folder meanwhile), else an empty list.
    """
    write_manifest(staging, command)
    if previous is None or not os.path.lexists(output):
        os.replace(staging, output)  # a directory replaces an empty one
        return []
    parent = os.path.dirname(os.path.abspath(output))
    aside = os.path.join(parent, f".{os.path.basename(os.path.abspath(output))}.previous-{os.getpid()}")
    os.replace(output, aside)
    try:
        os.replace(staging, output)
    except BaseException:
        os.replace(aside, output)
        raise
    left = remove_listed(aside, previous)
    return [aside] if left else []


def check_file_output(
    output: str, command: str, force: bool, inputs: Sequence[str] = (), example: str = "output"
) -> Optional[dict[str, Any]]:
    """
    `check_output` for a file output (an HDF5 file, a vocab.txt), after the checks of its path that every
    written file gets (`check_output_path`: not a directory, in a writable folder).
    """
    check_output_path(output, True, example)
    return check_output(output, command, force, inputs, directory=False)
