"""The `maelmo` command answers what needs no model before it imports anything heavy, runs a model-free
command whole without the model libraries, and says and writes exactly what AllenNLP's command line with the
plugin loaded says and writes."""

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
from allennlp.commands import ArgumentParserWithDefaults
from allennlp.commands.subcommand import Subcommand

from maelmo_declarations.commands import COMMANDS
from maelmo_declarations.parser import command_parser
from tests import run_allennlp_in_process
from tests.embedding.job_test import assert_same_vectors, run_cli, write_lines

MAELMO = str(Path(sys.executable).with_name("maelmo"))
HEAVY = ("torch", "numpy", "allennlp", "h5py", "maelmo_plugin")
# What a model-free command (`maelmo_files/`) never imports; it may import numpy and h5py (`maelmo-merge`).
MODEL = ("torch", "allennlp", "spacy", "transformers", "maelmo_plugin")


def allennlp_subparser(name: str) -> argparse.ArgumentParser:
    """The subparser AllenNLP's `parse_args` builds for the plugin's subcommand `name` (prog "maelmo")."""
    parser = ArgumentParserWithDefaults(description="Run AllenNLP", prog="maelmo")
    subparsers = parser.add_subparsers(title="Commands", metavar="")
    subcommand_class = Subcommand.by_name(name)
    subparser = subcommand_class().add_subparser(subparsers)
    if subcommand_class.requires_plugins:
        subparser.add_argument(
            "--include-package", type=str, action="append", default=[], help="additional packages to include"
        )
    return subparser


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_light_parser_is_the_one_allennlp_builds(name):
    light = command_parser(COMMANDS[name])[1]
    assert light.format_help() == allennlp_subparser(name).format_help()
    assert light.format_usage() == allennlp_subparser(name).format_usage()


def test_every_maelmo_subcommand_has_a_light_half():
    plugin_commands = {name for name in Subcommand.list_available() if name.startswith("maelmo-")}
    assert plugin_commands == set(COMMANDS)


def run(command, cwd, **env):
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **env}
    return subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=600)


def make_inputs(tmp_path):
    """The files the refusals name: an output that exists, an archive and a file of lines."""
    (tmp_path / "existing.hdf5").write_text("")
    (tmp_path / "model.tar.gz").write_text("")
    (tmp_path / "lines.txt").write_text("a sentence\n")


def refusals(tmp_path):
    """For each subcommand, a `--help` and refusals that need no model, as argv lists (`make_inputs`' files)."""
    existing, archive, lines = tmp_path / "existing.hdf5", tmp_path / "model.tar.gz", tmp_path / "lines.txt"
    missing = str(tmp_path / "missing" / "model.tar.gz")
    return {
        "embed --help": ["maelmo-embed", "--help"],
        "embed, no archive": ["maelmo-embed", missing, str(lines), str(tmp_path / "out.hdf5")],
        "embed, existing output": ["maelmo-embed", str(archive), str(lines), str(existing)],
        "embed, bad --shard": ["maelmo-embed", str(archive), str(lines), "out.hdf5", "--shard", "2/2"],
        "embed, bad --batch-size": [
            "maelmo-embed",
            str(archive),
            str(lines),
            "out.hdf5",
            "--batch-size",
            "0",
        ],
        "embed, no input": ["maelmo-embed", str(archive), str(tmp_path / "none.txt"), "out.hdf5"],
        "export --help": ["maelmo-export", "--help"],
        "export, no archive": ["maelmo-export", missing, str(tmp_path / "export")],
        "export, --quantize with hf": ["maelmo-export", str(archive), "out", "--quantize", "int8"],
        "merge, existing output": ["maelmo-merge", str(existing), "a.hdf5", "b.hdf5"],
        "merge, no shards": ["maelmo-merge", "out.hdf5"],
        "prepare, existing store": [
            "maelmo-prepare",
            "c.txt",
            "--vocab",
            "v.txt",
            "--output-dir",
            str(tmp_path),
        ],
        "vocab, output is a file": ["maelmo-vocab", "c.txt", "--output-dir", str(existing)],
        "vocab, --min-frequency 0": ["maelmo-vocab", "c.txt", "--output-dir", "v", "--min-frequency", "0"],
        "config --help": ["maelmo-config", "--help"],
        "config, no such config": ["maelmo-config", "lm/no_such_config"],
        "train, no such config": ["train", "lm/no_such_config", "-s", "run"],
    }


def test_the_light_path_imports_nothing_heavy(tmp_path):
    # Each case runs maelmo_cli.main in a fresh interpreter, which must exit before importing any of HEAVY.
    code = (
        "import sys\nfrom maelmo_cli.main import main\nsys.argv = ['maelmo', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    code = exit.code\n"
        f"print('LOADED', [name for name in {HEAVY!r} if name in sys.modules], code)\n"
    )
    make_inputs(tmp_path)
    for case, argv in refusals(tmp_path).items():
        result = run([sys.executable, "-c", code, *argv], cwd=tmp_path)
        expected = 0 if argv[-1] == "--help" else 2
        assert f"LOADED [] {expected}" in result.stdout, (case, result.stdout[-500:], result.stderr[-2000:])


# Each case starts AllenNLP once (about 15 CPU-s): two in the default suite, the rest with the slow tests.
FAST_CASES = ("embed --help", "embed, no archive")
CASES = [
    pytest.param(case, marks=() if case in FAST_CASES else pytest.mark.slow)
    for case in refusals(Path("unused"))
]


@pytest.mark.parametrize("case", CASES)
def test_a_refusal_reads_the_same_through_maelmo_and_the_plugins_command_line(tmp_path, case):
    make_inputs(tmp_path)
    argv = refusals(tmp_path)[case]
    light = run([MAELMO, *argv], cwd=tmp_path)
    heavy = run([sys.executable, "-m", "maelmo_plugin", *argv], cwd=tmp_path)
    assert (light.returncode, light.stdout, light.stderr) == (heavy.returncode, heavy.stdout, heavy.stderr)
    assert light.returncode in (0, 2) and light.stdout + light.stderr, light.stderr


def light_run(argv, cwd):
    """
    The `maelmo` console script on `argv`, timed by `-X importtime`: its status, stdout, stderr without the
    timings, and the top-level modules it imported.
    """
    result = run([sys.executable, "-X", "importtime", MAELMO, *argv], cwd=cwd)
    timings = [line for line in result.stderr.splitlines() if line.startswith("import time:")]
    imported = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in timings[1:]}  # [0]: the header
    assert "maelmo_cli" in imported  # the timings are read
    stderr = "".join(
        f"{line}\n" for line in result.stderr.splitlines() if not line.startswith("import time:")
    )
    return result.returncode, result.stdout, stderr, imported


def allennlp_run(argv, capsys):
    """`argv` through AllenNLP's command line with the plugin loaded, in this process: (status, out, err)."""
    capsys.readouterr()
    try:
        run_allennlp_in_process(*argv)
        status = 0
    except SystemExit as exit:
        status = exit.code
    out, err = capsys.readouterr()
    return status, out, err


def error_line(stderr):
    return [line.split(": error: ", 1)[1] for line in stderr.splitlines() if ": error: " in line]


def test_the_model_free_commands_run_without_the_model_libraries_and_write_the_same(
    fill_mask_archive, tmp_path, capsys
):
    assert sorted(name for name, command in COMMANDS.items() if command.model_free) == [
        "maelmo-merge",
        "maelmo-vocab",
    ]
    lines = tmp_path / "lines.txt"
    write_lines(lines, 80)  # two windows of 64 lines at --batch-size 2, one for each shard
    shards = [str(tmp_path / f"shard{index}.hdf5") for index in range(2)]
    for index, shard in enumerate(shards):
        run_cli(fill_mask_archive, str(lines), shard, "--batch-size", "2", "--shard", f"{index}/2")
    # `tokenizers` numbers the `##` pieces in hash order, so vocab.txt's order changes from run to run, and
    # breaks ties of pair counts by those numbers (huggingface/tokenizers#1794): words whose counts all differ
    # give the same entries every run.
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(
        " ".join(word for word, count in (("ab", 9), ("cd", 7), ("ef", 5)) for _ in range(count))
    )
    cases = {
        "vocab": lambda out: [
            "maelmo-vocab",
            str(corpus),
            "--output-dir",
            str(out / "vocab"),
            "--vocab-size",
            "80",
            "--min-frequency",
            "1",
        ],
        "merge": lambda out: ["maelmo-merge", str(out / "merged.hdf5"), *shards],
        # Refused by the job, once the shards are open, not by the checks before it.
        "merge, a shard missing": lambda out: ["maelmo-merge", str(out / "part.hdf5"), shards[0]],
    }
    # Each through the `maelmo` front into `light/`, and through AllenNLP's command line into `heavy/`.
    light, heavy = tmp_path / "light", tmp_path / "heavy"
    light.mkdir()
    heavy.mkdir()
    for case, argv in cases.items():
        status, out, err, imported = light_run(argv(light), tmp_path)
        assert "maelmo_files" in imported and not imported & set(MODEL), (case, sorted(imported & set(MODEL)))
        expected_status, expected_out, expected_err = allennlp_run(argv(heavy), capsys)
        assert status == expected_status and out.replace(str(light), str(heavy)) == expected_out, (case, err)
        assert error_line(err) == error_line(expected_err), case
    assert status == 2 and error_line(err) == [
        "Shard 1 of 2 is missing: give every shard's file (run maelmo-embed --shard K/2 for each missing K "
        "first)."
    ]
    vocab, expected_vocab = ((side / "vocab" / "vocab.txt").read_text().split() for side in (light, heavy))
    assert vocab[:5] == expected_vocab[:5] and sorted(vocab) == sorted(expected_vocab) and "ab" in vocab
    assert_same_vectors(light / "merged.hdf5", heavy / "merged.hdf5")
