"""
The contract every `maelmo-*` command keeps, generated from the command table (`maelmo_declarations/commands/`):
a command added to the table fails `test_every_command_of_the_table_has_its_row` until it has a row here, and
then runs through every test below.

- Every documented choice of every option (`choices=` in the table) runs through the command line, on one tiny
  archive (a `--precision auto` that no test ran broke unseen once).
- Every command that writes, against targets a careful tester tries (a folder or file of the user's, its own
  input, another model's export, `.`, the home folder, a symbolic link, a read-only folder, a full disk), with
  and without `--force`: the sha256 of every file that existed before is unchanged, and the command either
  succeeds or refuses in one line, through the `maelmo` front and through AllenNLP's command line alike.
- Every command that reads an archive, against hostile archives (a pickle that runs code, members that leave
  the folder, links, truncated, a byte flipped inside a tensor, no `config.json`): one line naming the archive,
  no code run, nothing written.

The commands run in this process: the refusals come before any model loads, and the tiny archive loads in a
fraction of a second.
"""

import io
import logging
import os
import resource
import shutil
import sys
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest
import torch

from maelmo_cli.main import answer_before_loading
from maelmo_declarations.commands import COMMANDS
from maelmo_declarations.parser import command_parser
from tests import FIXTURES_ROOT, PROJECT_ROOT, file_tree, run_allennlp_in_process
from tests.safe_loading_test import save_code_running_pickle


@dataclass(frozen=True)
class Inputs:
    """What the commands read, in a folder of their own: the tiny archive, sentences, a corpus and its vocab."""

    folder: Path
    archive: str
    lines: str
    corpus: str
    vocab: str
    config: str
    train_config: str
    rows: str
    shards: tuple[str, ...]
    arena: str


@dataclass(frozen=True)
class Row:
    """How a command runs on `Inputs`, writing `output`; `writes`: "file", "folder", or None (prints only)."""

    writes: Optional[str]
    argv: Callable[[Inputs, str], list[str]]
    # The input whose folder and file are hostile targets.
    main_input: Callable[[Inputs], str] = lambda inputs: inputs.lines
    force: str = "--force"


ROWS = {
    "maelmo-arena": Row("folder", lambda i, out: ["maelmo-arena", i.arena, "-s", out], lambda i: i.arena),
    "maelmo-config": Row(None, lambda i, out: ["maelmo-config", i.config]),
    "maelmo-embed": Row(
        "file", lambda i, out: ["maelmo-embed", i.archive, i.lines, out, "--batch-size", "2"]
    ),
    "maelmo-merge": Row("file", lambda i, out: ["maelmo-merge", out, *i.shards], lambda i: i.shards[0]),
    "maelmo-export": Row("folder", lambda i, out: ["maelmo-export", i.archive, out], lambda i: i.archive),
    "maelmo-prepare": Row(
        "folder",
        lambda i, out: [
            "maelmo-prepare",
            i.corpus,
            "--vocab",
            i.vocab,
            "--output-dir",
            out,
            "--processes",
            "1",
        ],
        lambda i: i.corpus,
    ),
    "maelmo-ray-embed": Row(
        "folder",
        lambda i, out: ["maelmo-ray-embed", i.rows, out, "--model", i.archive, "--actors", "1"],
        lambda i: i.rows,
    ),
    "maelmo-torchrun": Row(
        "folder",
        lambda i, out: ["maelmo-torchrun", "--standalone", "train", i.train_config, "-s", out],
        lambda i: i.train_config,
        force="-f",
    ),
    "maelmo-vocab": Row(
        "folder",
        lambda i, out: [
            "maelmo-vocab",
            i.corpus,
            "--output-dir",
            out,
            "--vocab-size",
            "60",
            "--min-frequency",
            "1",
        ],
        lambda i: i.corpus,
    ),
}
# A choice that needs another option beside it.
COMPANIONS = {("maelmo-export", "--quantize", "int8"): ["--format", "onnx"]}


def test_every_command_of_the_table_has_its_row():
    assert set(ROWS) == set(COMMANDS)


def documented_choices() -> list[tuple[str, str, str]]:
    """(command, option, choice) for every `choices=` of every command's parser."""
    found = []
    for name, command in sorted(COMMANDS.items()):
        for action in command_parser(command)[1]._actions:
            if action.choices and action.option_strings:
                found += [(name, action.option_strings[-1], str(choice)) for choice in action.choices]
    return found


# The pre-training config `maelmo-torchrun` runs: the small config at the sizes of tests/training, on the fixtures.
TRAIN_CONFIG = (
    '(import "{base}") + {{ sizes+:: {{"dim": 16, "cells": 24, "dropout": 0.0, "sequence_length": 8, "epochs": 1, '
    '"batch_size": 2}} }}\n'
)
# The arena `maelmo-arena` runs: two arms of the arena tests' tiny config, one rate each, on the inputs' corpus.
ARENA = """{{
  arms: {{
    masked_elmo: {{ config: "{config}", rates: [1e-2] }},
    lstm: {{ config: "{config}", rates: [1e-2],
            encoder: {{ type: "lstm", input_size: 16, hidden_size: 8, num_layers: 3, bidirectional: true }} }},
  }},
  corpus: {{ train: "{corpus}", validation: "{corpus}", vocab: "{vocab}" }},
  epochs: 1,
  seeds: [1, 2],
  parameter_tolerance: 0.1,
}}
"""
TRAIN_DATA = {
    "MAELMO_TRAIN_PATH": str(FIXTURES_ROOT / "lm" / "repetitive.txt"),
    "MAELMO_VALIDATION_PATH": str(FIXTURES_ROOT / "lm" / "corpus.txt"),
    "MAELMO_VOCAB": str(FIXTURES_ROOT / "lm" / "vocab.txt"),
}


@pytest.fixture(scope="module")
def inputs(masked_elmo_archive, tmp_path_factory) -> Iterator[Inputs]:
    folder = tmp_path_factory.mktemp("inputs")
    shutil.copy(masked_elmo_archive, folder / "model.tar.gz")
    shutil.copy(FIXTURES_ROOT / "lm" / "corpus.txt", folder / "corpus.txt")
    shutil.copy(FIXTURES_ROOT / "lm" / "vocab.txt", folder / "vocab.txt")
    (folder / "lines.txt").write_text("A cat sleeps.\nThe king lived in Berlin.\nA dog.\n", encoding="utf-8")
    (folder / "config.jsonnet").write_text('{"a": 1 + 1}\n', encoding="utf-8")
    (folder / "rows.jsonl").write_text('{"id": 1, "text": "A cat sleeps."}\n{"id": 2, "text": "A dog."}\n')
    base = PROJECT_ROOT / "training_config" / "lm" / "pretrain_small_own_data.jsonnet"
    (folder / "train.jsonnet").write_text(TRAIN_CONFIG.format(base=base), encoding="utf-8")
    archive, lines, corpus, vocab = (
        str(folder / name) for name in ("model.tar.gz", "lines.txt", "corpus.txt", "vocab.txt")
    )
    shards = tuple(str(folder / f"shard{index}.hdf5") for index in range(2))
    tiny_lm = FIXTURES_ROOT / "arena" / "tiny_lm.jsonnet"
    (folder / "arena.jsonnet").write_text(ARENA.format(config=tiny_lm, corpus=corpus, vocab=vocab))
    for index, shard in enumerate(shards):
        run_allennlp_in_process("maelmo-embed", archive, lines, shard, "--shard", f"{index}/2")
    with pytest.MonkeyPatch.context() as environment:
        for name, value in TRAIN_DATA.items():
            environment.setenv(name, value)
        yield Inputs(
            folder,
            archive,
            lines,
            corpus,
            vocab,
            str(folder / "config.jsonnet"),
            str(folder / "train.jsonnet"),
            str(folder / "rows.jsonl"),
            shards,
            str(folder / "arena.jsonnet"),
        )
    if "ray" in sys.modules and sys.modules["ray"].is_initialized():
        sys.modules["ray"].shutdown()  # the local cluster maelmo-ray-embed started in this process


def run_both(argv: list[str], capsys) -> tuple[int, str]:
    """
    `argv` through the `maelmo` front and then, unless the front refused it, through AllenNLP's command line:
    (exit status, the error line or ""). A refusal must be the same one line through both.
    """
    try:
        answer_before_loading(list(argv))
    except SystemExit as refusal:
        return refusal.code, one_line(capsys.readouterr().err)
    capsys.readouterr()
    try:
        run_allennlp_in_process(*argv)
    except SystemExit as refusal:
        return refusal.code, one_line(capsys.readouterr().err)
    return 0, ""


def one_line(stderr: str) -> str:
    """The error of argparse's usage-and-error output, checked to be one line after the usage."""
    assert "Traceback" not in stderr, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and stderr.rstrip().endswith(errors[0]), stderr[-3000:]
    return errors[0]


@pytest.mark.parametrize("name", sorted(ROWS))
def test_every_command_runs_on_the_tiny_inputs(name, inputs, tmp_path, capsys):
    output = str(tmp_path / "output")
    assert run_both(ROWS[name].argv(inputs, output), capsys) == (0, "")
    assert ROWS[name].writes is None or os.path.exists(output)


@pytest.mark.parametrize("name, option, choice", documented_choices())
def test_every_documented_choice_runs_through_the_command_line(
    name, option, choice, inputs, tmp_path, capsys
):
    output = str(tmp_path / "output")
    argv = [*ROWS[name].argv(inputs, output), option, choice, *COMPANIONS.get((name, option, choice), [])]
    assert run_both(argv, capsys) == (0, "")
    assert os.path.exists(output)


def test_the_choices_are_found():
    choices = documented_choices()
    assert ("maelmo-embed", "--precision", "auto") in choices and (
        "maelmo-export",
        "--format",
        "onnx",
    ) in choices


HOSTILE_TARGETS = (
    "user_folder",
    "user_file",
    "input",
    "input_folder",
    "other_export",
    "cwd",
    "home",
    "symlink",
)
WRITERS = sorted(name for name, row in ROWS.items() if row.writes)


def hostile_target(kind: str, row: Row, inputs: Inputs, tmp_path: Path, monkeypatch) -> str:
    """The output path of `kind`, made in `tmp_path` (the current and home folders are moved there too)."""
    user = tmp_path / "thesis"
    user.mkdir()
    (user / "chapter.txt").write_text("my thesis", encoding="utf-8")
    other = tmp_path / "other_model"
    other.mkdir()
    for name in ("config.json", "model.safetensors", "vocab.txt", "tokenizer.json"):
        (other / name).write_text(f"another model's {name}", encoding="utf-8")
    if kind == "cwd":
        monkeypatch.chdir(user)
        return "."
    if kind == "home":
        monkeypatch.setenv("HOME", str(user))
        return str(user)
    if kind == "symlink":
        os.symlink(user if row.writes == "folder" else user / "chapter.txt", tmp_path / "link")
        return str(tmp_path / "link")
    return {
        "user_folder": str(user),
        "user_file": str(user / "chapter.txt"),
        "input": row.main_input(inputs),
        "input_folder": os.path.dirname(row.main_input(inputs)),
        "other_export": str(other if row.writes == "folder" else other / "model.safetensors"),
    }[kind]


@pytest.mark.parametrize("force", [False, True], ids=["", "force"])
@pytest.mark.parametrize("kind", HOSTILE_TARGETS)
@pytest.mark.parametrize("name", WRITERS)
def test_a_hostile_target_loses_no_file(name, kind, force, inputs, tmp_path, capsys, monkeypatch):
    row = ROWS[name]
    output = hostile_target(kind, row, inputs, tmp_path, monkeypatch)
    before = {folder: file_tree(folder) for folder in (tmp_path, inputs.folder)}
    status, error = run_both(row.argv(inputs, output) + [row.force] * force, capsys)
    after = {folder: file_tree(folder) for folder in (tmp_path, inputs.folder)}
    for folder, files in before.items():
        changed = sorted(path for path, content in files.items() if after[folder].get(path) != content)
        assert not changed, f"{name} {row.force * force} into {kind} changed {changed}; {error}"
    if status != 0:
        assert status == 2 and after == before, error  # a refusal leaves nothing behind either


@pytest.mark.parametrize("name", WRITERS)
def test_a_read_only_folder_is_one_line(name, inputs, tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root writes into a read-only folder: the refusal cannot be seen here")
    folder = tmp_path / "read_only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        status, error = run_both(ROWS[name].argv(inputs, str(folder / "output")), capsys)
    finally:
        folder.chmod(0o755)
    assert status == 2 and "writable" in error and os.listdir(folder) == []


# A training run writes into its folder as it goes (checkpoints, for hours), and `-f` replaces the previous run at
# the start, as its name says: a full disk is then a failed run, which the same command continues. So does the Ray
# job, whose Parquet files Ray's workers write (processes this one's file-size limit does not reach), and whose
# `--force` removes the finished job's files before Ray writes the new ones (docs/distributed.md).
# An arena writes its runs as they go too, and its `--force` removes a finished arena's files before it starts.
REPLACED_WHOLE = sorted(
    name for name in WRITERS if name not in ("maelmo-torchrun", "maelmo-ray-embed", "maelmo-arena")
)


@pytest.mark.parametrize("name", REPLACED_WHOLE)
def test_a_full_disk_keeps_the_previous_output_and_is_one_line(name, inputs, tmp_path, capsys, monkeypatch):
    """
    Replacing a previous output (`--force`) on a disk that fills up (RLIMIT_FSIZE) is one line and keeps the
    old output whole; once there is room, the same command completes.
    """
    output = str(tmp_path / "output")
    argv = [*ROWS[name].argv(inputs, output), ROWS[name].force]
    assert run_both(argv, capsys) == (0, "")
    before = file_tree(tmp_path)
    # The limit holds for every file this process writes, pytest's captured logs too: a failed log line is
    # not this command's output.
    monkeypatch.setattr(logging, "raiseExceptions", False)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, hard))  # Python ignores SIGXFSZ: a write fails with EFBIG
    try:
        status, error = run_both(argv, capsys)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert status == 2 and "File too large" in error and "run the same command again" in error, error
    after = file_tree(tmp_path)
    assert {path: after.get(path) for path in before} == before
    assert run_both(argv, capsys) == (0, "")


def members_of(archive: str) -> dict[str, bytes]:
    with tarfile.open(archive, "r:gz") as tar:
        return {member.name: tar.extractfile(member).read() for member in tar.getmembers() if member.isfile()}


def write_archive(path: Path, members: dict[str, bytes], extra: tuple[tarfile.TarInfo, ...] = ()) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        for info in extra:
            tar.addfile(info, io.BytesIO(b"x" * info.size) if info.isfile() else None)
    return str(path)


def link(name: str, target: str, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def outside(name: str, size: int = 1) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    return info


def hostile_archive(kind: str, good: str, folder: Path, escape: Path, marker: Path) -> str:
    members = members_of(good)
    path = folder / f"{kind}.tar.gz"
    if kind == "code_running_pickle":
        weights = folder / "weights.th"
        save_code_running_pickle(weights, marker)
        members["weights.th"] = weights.read_bytes()
        weights.unlink()
        return write_archive(path, members)
    if kind == "flipped_tensor_byte":
        weights = torch.load(io.BytesIO(members["weights.th"]), weights_only=True)
        name = next(key for key, value in weights.items() if value.is_floating_point() and value.numel() > 4)
        original = weights[name].view(-1)[3].clone()
        members["weights.th"] = members["weights.th"].replace(
            original.numpy().tobytes(), (original + 1.0).numpy().tobytes(), 1
        )
        return write_archive(path, members)
    if kind == "no_config":
        del members["config.json"]
        return write_archive(path, members)
    if kind == "truncated":
        data = Path(write_archive(path, members)).read_bytes()
        path.write_bytes(data[: len(data) // 2])
        return str(path)
    extra = {
        "dotdot_member": (outside(f"../{escape.name}"),),
        "absolute_member": (outside(str(escape)),),
        "symlink_member": (link("out", str(escape.parent), tarfile.SYMTYPE), outside(f"out/{escape.name}")),
        "hardlink_member": (link("vocabulary/hard", str(escape), tarfile.LNKTYPE),),
    }[kind]
    return write_archive(path, members, extra)


HOSTILE_ARCHIVES = (
    "code_running_pickle",
    "dotdot_member",
    "absolute_member",
    "symlink_member",
    "hardlink_member",
    "truncated",
    "flipped_tensor_byte",
    "no_config",
)
ARCHIVE_READERS = sorted(
    name
    for name, command in COMMANDS.items()
    if any(action.dest == "archive_file" for action in command_parser(command)[1]._actions)
)


def test_the_archive_readers_are_found():
    assert {"maelmo-embed", "maelmo-export"} <= set(ARCHIVE_READERS)


@pytest.mark.parametrize("kind", HOSTILE_ARCHIVES)
@pytest.mark.parametrize("name", ARCHIVE_READERS)
def test_a_hostile_archive_is_one_line_naming_it(name, kind, inputs, tmp_path, capsys, monkeypatch):
    import tempfile

    extraction = tmp_path / "temp"
    extraction.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(extraction))
    escape, marker = tmp_path / "escaped.txt", tmp_path / "code_ran.txt"
    archive = hostile_archive(kind, inputs.archive, tmp_path, escape, marker)
    before = file_tree(tmp_path)
    output = str(tmp_path / "output")
    argv = [archive if value == inputs.archive else value for value in ROWS[name].argv(inputs, output)]
    status, error = run_both(argv, capsys)
    assert not marker.exists() and not escape.exists()
    assert status == 2 and archive in error, error
    assert file_tree(tmp_path) == before and list(extraction.iterdir()) == []
