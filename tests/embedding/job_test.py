"""
`allennlp maelmo-embed` never loses work: bad output paths are refused before the model loads, an existing
output survives a run that fails, and a stopped run (Ctrl-C, kill -9, a crash) continues to the vectors of
an uninterrupted run, bit for bit.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import h5py
import numpy as np
import pytest

from maelmo_declarations.owned_outputs import write_manifest
from maelmo_declarations.refusals import Refusal
from maelmo_files.common.partial_output import PartialLock
from maelmo_plugin.commands import embed
from maelmo_plugin.embedding.fingerprint import job_fingerprint
from maelmo_plugin.embedding.job import EmbeddingJob
from maelmo_plugin.embedding.pipeline import embedding_options
from maelmo_plugin.lm.predictors.representations import RepresentationsPredictor
from tests import PROJECT_ROOT, run_allennlp_in_process

WORDS = "the cat sleeps on a mat while the king lived in Berlin and a dog eats fish".split()


def write_lines(path, count: int) -> None:
    # Lines of varied lengths, so that batches sort and pad.
    lines = [
        " ".join(WORDS[(i * 7) % len(WORDS) :] + WORDS[: i % 5]).capitalize() + "." for i in range(count)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def run_cli(*args: str) -> None:
    run_allennlp_in_process("maelmo-embed", *args)


def assert_same_vectors(path_a, path_b) -> None:
    with h5py.File(path_a, "r") as a, h5py.File(path_b, "r") as b:
        assert set(a.keys()) == set(b.keys())
        assert a["sentence_to_index"][0] == b["sentence_to_index"][0]
        for name in a:
            if name != "sentence_to_index":
                assert np.array_equal(a[name][()], b[name][()]), name  # bit for bit
                assert list(a[name].attrs["tokens"]) == list(b[name].attrs["tokens"])


def crashing_after(batches: int):
    """`RepresentationsPredictor.vectors`, raising "crash" once `batches` batches were embedded."""
    original, done = RepresentationsPredictor.vectors, []

    def vectors(self, instances):
        if len(done) == batches:
            raise RuntimeError("crash")
        done.append(len(instances))
        return original(self, instances)

    return vectors


@pytest.fixture
def input_file(tmp_path):
    path = tmp_path / "sentences.txt"
    write_lines(path, 20)
    return path


class TestBadOutputPathsAreRefusedBeforeTheModelLoads:
    def refused(self, archive, input_file, output, *extra, capsys):
        loader = mock.Mock(side_effect=AssertionError("the model was loaded"))
        with mock.patch.object(embed, "load_language_model_archive", loader):
            with pytest.raises(SystemExit) as exit_info:
                run_cli(archive, str(input_file), str(output), *extra)
        assert exit_info.value.code == 2 and not loader.called
        error = capsys.readouterr().err
        assert "Traceback" not in error
        message = error.strip().splitlines()[-1]  # after argparse's usage
        assert message.startswith("allennlp maelmo-embed: error: ")
        return message

    def test_a_directory(self, fill_mask_archive, input_file, tmp_path, capsys):
        message = self.refused(fill_mask_archive, input_file, tmp_path, capsys=capsys)
        assert f"The output {tmp_path} is a directory: give the path of the file to write, e.g. " in message
        assert str(tmp_path / "vectors.hdf5") in message

    def test_an_input_that_is_a_directory(self, fill_mask_archive, input_file, tmp_path, capsys):
        message = self.refused(fill_mask_archive, tmp_path, tmp_path / "out.hdf5", capsys=capsys)
        assert (
            f"The input {tmp_path} is a directory: maelmo-embed reads one file, one sentence per line"
            in message
        )
        assert f"cat {tmp_path / '*.txt'} > sentences.txt" in message

    def test_a_missing_directory(self, fill_mask_archive, input_file, tmp_path, capsys):
        output = tmp_path / "missing" / "out.hdf5"
        message = self.refused(fill_mask_archive, input_file, output, capsys=capsys)
        assert f"Cannot write {output}: its directory {tmp_path / 'missing'} does not exist. " in message
        assert f"mkdir -p {tmp_path / 'missing'}" in message

    def test_an_unwritable_directory(self, fill_mask_archive, input_file, tmp_path, capsys):
        (tmp_path / "read_only").mkdir()
        output = tmp_path / "read_only" / "out.hdf5"
        # chmod does not stop root, who runs these tests in containers: the permission check is faked.
        real_access = os.access
        with mock.patch.object(
            os,
            "access",
            lambda path, mode: False if str(path).endswith("read_only") else real_access(path, mode),
        ):
            message = self.refused(fill_mask_archive, input_file, output, capsys=capsys)
        assert f"its directory {tmp_path / 'read_only'} is not writable by this user" in message

    def test_an_existing_output_without_force(self, fill_mask_archive, input_file, tmp_path, capsys):
        output = tmp_path / "out.hdf5"
        output.write_bytes(b"precious")  # a user's file: kept, --force or not
        for force in ((), ("--force",)):
            message = self.refused(fill_mask_archive, input_file, output, *force, capsys=capsys)
            assert "exists and is a file that maelmo-embed did not write" in message
        write_manifest(str(output), "maelmo-embed", directory=False)  # a previous run's
        message = self.refused(fill_mask_archive, input_file, output, capsys=capsys)
        assert message.endswith(
            "holds a previous output of maelmo-embed: give a new path, or --force to replace it."
        )
        assert output.read_bytes() == b"precious"

    def test_an_output_being_written_by_another_run(self, fill_mask_archive, input_file, tmp_path, capsys):
        output = tmp_path / "out.hdf5"
        (tmp_path / "out.hdf5.partial").mkdir()
        other = PartialLock(
            str(tmp_path / "out.hdf5.partial" / "lock"), str(output)
        )  # another open file: flock conflicts
        try:
            message = self.refused(fill_mask_archive, input_file, output, capsys=capsys)
        finally:
            other.release()
        assert (
            f"{tmp_path / 'out.hdf5.partial' / 'lock'} is held by another running command (process {os.getpid()})"
            in message
        )
        assert "wait for it to finish" in message


def test_an_existing_output_survives_a_run_that_fails_and_is_replaced_only_when_complete(
    fill_mask_archive, input_file, tmp_path
):
    output = tmp_path / "out.hdf5"
    output.write_bytes(b"precious")
    write_manifest(str(output), "maelmo-embed", directory=False)  # a previous run's output
    calls = []
    original = RepresentationsPredictor.vectors

    def failing_second_batch(self, instances):
        calls.append(len(instances))
        if len(calls) == 2:
            raise RuntimeError("out of memory")
        return original(self, instances)

    with mock.patch.object(RepresentationsPredictor, "vectors", failing_second_batch):
        with pytest.raises(RuntimeError, match="out of memory"):
            run_cli(fill_mask_archive, str(input_file), str(output), "--batch-size", "4", "--force")
    assert output.read_bytes() == b"precious"
    assert len(os.listdir(tmp_path / "out.hdf5.partial" / "batches")) == 1  # kept, to continue from

    # A bad line found while tokenizing (after the checks): the partial cannot be continued, and goes.
    bad = tmp_path / "bad.txt"
    bad.write_text("A cat.\nThe [PAD] dog.\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        run_cli(fill_mask_archive, str(bad), str(tmp_path / "bad.hdf5"))
    assert not (tmp_path / "bad.hdf5").exists() and not (tmp_path / "bad.hdf5.partial").exists()

    run_cli(fill_mask_archive, str(input_file), str(output), "--batch-size", "4", "--force")
    assert not (tmp_path / "out.hdf5.partial").exists()
    with h5py.File(output, "r") as hdf5:
        assert len(hdf5.keys()) == 21


def test_a_run_that_crashed_continues_to_the_uninterrupted_vectors(fill_mask_archive, input_file, tmp_path):
    expected = tmp_path / "expected.hdf5"
    run_cli(fill_mask_archive, str(input_file), str(expected), "--batch-size", "3", "--precision", "int8")
    output = tmp_path / "out.hdf5"
    computed = []
    original = RepresentationsPredictor.vectors

    def crash_at_third_batch(self, instances):
        if len(computed) == 2:
            raise RuntimeError("crash")
        computed.append(len(instances))
        return original(self, instances)

    args = (fill_mask_archive, str(input_file), str(output), "--batch-size", "3", "--precision", "int8")
    with mock.patch.object(RepresentationsPredictor, "vectors", crash_at_third_batch):
        with pytest.raises(RuntimeError):
            run_cli(*args)
    resumed = []

    def counting(self, instances):
        resumed.append(len(instances))
        return original(self, instances)

    with mock.patch.object(RepresentationsPredictor, "vectors", counting):
        run_cli(*args)
    assert sum(resumed) == 20 - 6  # only the batches not written
    assert_same_vectors(output, expected)


def test_a_changed_input_or_option_is_refused_on_resume_naming_it(fill_mask_archive, input_file, tmp_path):
    output = tmp_path / "out.hdf5"
    with mock.patch.object(RepresentationsPredictor, "vectors", crashing_after(1)):
        with pytest.raises(RuntimeError):
            run_cli(fill_mask_archive, str(input_file), str(output), "--batch-size", "4")
    partial = tmp_path / "out.hdf5.partial"
    loader = mock.Mock(side_effect=AssertionError("the model was loaded"))
    with mock.patch.object(embed, "load_language_model_archive", loader):
        with pytest.raises(Refusal, match=r"batch_size: 4 then, 8 now; window: 128 then, 256 now"):
            EmbeddingJob.start(
                str(output),
                job_fingerprint(
                    str(input_file),
                    None,  # not loaded: the model is compared once it is
                    embedding_options(
                        {"layer": None, "scalar_mix_parameters": None, "pool": None, "precision": "fp32"},
                        8,
                        on_gpu=False,
                    ),
                ),
                force=False,
            )
        write_lines(input_file, 21)
        with pytest.raises(SystemExit):
            run_cli(fill_mask_archive, str(input_file), str(output), "--batch-size", "4")
    assert not loader.called
    assert partial.is_dir()


def test_a_mistyped_archive_or_a_run_that_wrote_nothing_leaves_no_partial(
    fill_mask_archive, input_file, tmp_path, capsys
):
    output = tmp_path / "out.hdf5"
    with pytest.raises(SystemExit):
        run_cli(str(tmp_path / "mistyped.tar.gz"), str(input_file), str(output))
    assert (
        capsys.readouterr()
        .err.strip()
        .splitlines()[-1]
        .endswith(
            f"error: No such archive: '{tmp_path / 'mistyped.tar.gz'}'. Give a model.tar.gz, its serialization "
            f"directory or a maelmo-export directory."
        )
    )
    not_an_archive = tmp_path / "notes.txt"
    not_an_archive.write_text("not an archive\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        run_cli(str(not_an_archive), str(input_file), str(output))
    assert "is corrupt or truncated" in capsys.readouterr().err
    with mock.patch.object(RepresentationsPredictor, "vectors", crashing_after(0)):
        with pytest.raises(RuntimeError):
            run_cli(fill_mask_archive, str(input_file), str(output))
    assert sorted(os.listdir(tmp_path)) == sorted([input_file.name, not_an_archive.name])
    run_cli(fill_mask_archive, str(input_file), str(output))  # the corrected command runs, with no --force
    assert output.is_file()


def test_a_run_started_from_python_and_killed_is_continued_by_the_command_line(
    fill_mask_archive, fill_mask_elmo, input_file, tmp_path, capsys
):
    expected = tmp_path / "expected.hdf5"
    run_cli(fill_mask_archive, str(input_file), str(expected), "--batch-size", "4", "--layer", "-1")
    output = tmp_path / "out.hdf5"
    with mock.patch.object(RepresentationsPredictor, "vectors", crashing_after(2)):
        with pytest.raises(RuntimeError, match="crash"):
            fill_mask_elmo.embed_file(str(input_file), str(output), layer=-1, batch_size=4)
    assert (tmp_path / "out.hdf5.partial" / "batches").is_dir() and not output.exists()
    resumed = []
    original = RepresentationsPredictor.vectors

    def counting(self, instances):
        resumed.append(len(instances))
        return original(self, instances)

    with mock.patch.object(RepresentationsPredictor, "vectors", counting):
        run_cli(fill_mask_archive, str(input_file), str(output), "--batch-size", "4", "--layer", "-1")
    assert sum(resumed) == 20 - 8  # the same job: only the batches Python had not written
    assert_same_vectors(output, expected)


def test_a_partial_of_another_model_is_refused_once_the_model_loads(
    fill_mask_elmo, masked_elmo_archive, input_file, tmp_path, capsys
):
    output = tmp_path / "out.hdf5"
    with mock.patch.object(RepresentationsPredictor, "vectors", crashing_after(1)):
        with pytest.raises(RuntimeError, match="crash"):
            fill_mask_elmo.embed_file(str(input_file), str(output), layer=-1, batch_size=4)
    with pytest.raises(SystemExit):
        run_cli(masked_elmo_archive, str(input_file), str(output), "--batch-size", "4", "--layer", "-1")
    assert "holds an unfinished maelmo-embed run of another model" in capsys.readouterr().err
    assert len(os.listdir(tmp_path / "out.hdf5.partial" / "batches")) == 1  # kept, to finish it
    run_cli(
        masked_elmo_archive, str(input_file), str(output), "--batch-size", "4", "--layer", "-1", "--force"
    )
    assert output.is_file()


def test_a_changed_input_message(fill_mask_archive, input_file, tmp_path, capsys):
    output = tmp_path / "out.hdf5"
    with mock.patch.object(RepresentationsPredictor, "vectors", crashing_after(1)):
        with pytest.raises(RuntimeError):
            run_cli(fill_mask_archive, str(input_file), str(output), "--batch-size", "4")
    write_lines(input_file, 21)
    with pytest.raises(SystemExit):
        run_cli(fill_mask_archive, str(input_file), str(output), "--batch-size", "4")
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.endswith(
        f"error: {output}.partial holds an unfinished maelmo-embed run whose vectors would differ from this "
        f"one's (the input's content): run the command it was started with to finish it, or give --force to "
        f"discard it and start over."
    )
    run_cli(fill_mask_archive, str(input_file), str(output), "--batch-size", "4", "--force")  # starts over
    with h5py.File(output, "r") as hdf5:
        assert len(hdf5.keys()) == 22


# Run in a subprocess, with each batch slowed so that the signal lands mid-run. Ctrl-C's handler is set as in a
# terminal: a job a non-interactive shell starts in the background (CI's, or `cmd &`) inherits SIGINT ignored.
SLOW_EMBED = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "from maelmo_plugin.lm.predictors.representations import RepresentationsPredictor as P\n"
    "vectors = P.vectors\n"
    "P.vectors = lambda self, instances: (time.sleep(0.2), vectors(self, instances))[1]\n"
    "from allennlp.commands import main\n"
    "sys.argv = ['allennlp', 'maelmo-embed'] + sys.argv[1:]\n"
    "main(prog='allennlp')\n"
)


def wait_for_batches(process: subprocess.Popen, batches, count: int) -> None:
    while not (batches.is_dir() and len([n for n in os.listdir(batches) if n.endswith(".hdf5")]) >= count):
        assert process.poll() is None, process.communicate()[1][-3000:]
        time.sleep(0.05)


def start_stoppable_run(archive: str, tmp_path, *extra: str, **popen) -> tuple[subprocess.Popen, tuple]:
    """
    A run to stop mid-way: `maelmo-embed` of 60 sentences in batches of 2 into tmp_path/out.hdf5, started with
    `extra` options in a subprocess (`popen`: more Popen arguments) and each batch slowed, returned once 3 batches
    are on disk, with its arguments less `extra`.
    """
    input_file = tmp_path / "sentences.txt"
    write_lines(input_file, 60)
    args = (archive, str(input_file), str(tmp_path / "out.hdf5"), "--batch-size", "2", "--pool", "mean")
    process = subprocess.Popen(
        [sys.executable, "-c", SLOW_EMBED, *args, *extra],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )
    wait_for_batches(process, tmp_path / "out.hdf5.partial" / "batches", 3)
    return process, args


def assert_continued_to_the_uninterrupted_vectors(args: tuple, *extra: str) -> None:
    """
    The stopped run of `start_stoppable_run` left no output; the same command (`args` and `extra`) run again
    writes the vectors of one uninterrupted run of `args` in this process, bit for bit.
    """
    output = Path(args[2])
    assert not output.exists()
    run_cli(*args, *extra)  # the same command, continued
    expected = output.with_name("expected.hdf5")
    run_cli(*args[:2], str(expected), *args[3:])
    assert_same_vectors(output, expected)


@pytest.mark.parametrize("kill", [signal.SIGKILL, signal.SIGINT])
def test_a_killed_or_interrupted_run_continues_to_the_uninterrupted_vectors(
    fill_mask_archive, tmp_path, kill
):
    process, args = start_stoppable_run(fill_mask_archive, tmp_path)
    output = args[2]
    process.send_signal(kill)
    _, stderr = process.communicate(timeout=300)
    if kill == signal.SIGINT:
        assert process.returncode == 130 and "Traceback" not in stderr
        written = stderr.strip().splitlines()[-1]
        assert written.startswith("Interrupted: the vectors of ") and written.endswith(
            f" sentences are kept in {output}.partial; run the same command again to continue from there."
        )
    else:
        assert process.returncode == -signal.SIGKILL
    assert_continued_to_the_uninterrupted_vectors(args)


def test_a_changed_option_names_what_none_means():
    """`--layer` not given is every layer, not "None"; `--pool` not given is no pooling."""
    from maelmo_files.embedding.differences import differences

    before = {"options": {"layer": None, "pool": None, "batch_size": 64}}
    now = {"options": {"layer": -1, "pool": "mean", "batch_size": 64}}
    assert differences(before, now) == ["layer: all then, -1 now", "pool: none then, 'mean' now"]
