"""
`allennlp maelmo-embed --processes N`: N worker processes write the file one process writes, bit for bit,
and a run whose parent or worker is killed, or that is interrupted, continues to it.
"""

import os
import signal
import time
from unittest import mock

import pytest

from maelmo_plugin.commands import embed
from maelmo_plugin.lm.predictors.representations import RepresentationsPredictor
from tests.embedding.job_test import (
    assert_continued_to_the_uninterrupted_vectors,
    assert_same_vectors,
    crashing_after,
    run_cli,
    start_stoppable_run,
    write_lines,
)


@pytest.fixture
def input_file(tmp_path):
    path = tmp_path / "sentences.txt"
    write_lines(path, 30)
    return path


@pytest.mark.parametrize("options", [(), ("--precision", "int8", "--pool", "mean", "--layer", "mix")])
def test_two_processes_write_the_vectors_of_one_bit_for_bit(fill_mask_archive, input_file, tmp_path, options):
    one, two = tmp_path / "one.hdf5", tmp_path / "two.hdf5"
    run_cli(fill_mask_archive, str(input_file), str(one), "--batch-size", "3", *options)
    pids = tmp_path / "pids.txt"
    original = RepresentationsPredictor.vectors

    def recording(self, instances):
        with open(pids, "a", encoding="utf-8") as stream:
            stream.write(f"{os.getpid()}\n")
        return original(self, instances)

    with mock.patch.object(RepresentationsPredictor, "vectors", recording):
        run_cli(
            fill_mask_archive, str(input_file), str(two), "--batch-size", "3", "--processes", "2", *options
        )
    computed_by = pids.read_text(encoding="utf-8").split()
    assert len(computed_by) == 10 and str(os.getpid()) not in computed_by  # the workers embedded
    assert_same_vectors(two, one)
    assert not (tmp_path / "two.hdf5.partial").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (("--processes", "0"), "error: --processes must be at least 1, got 0."),
        (("--processes", "-2"), "error: --processes must be at least 1, got -2."),
        (
            ("--processes", "2", "--cuda-device", "0"),
            "error: --processes 2 runs CPU worker processes: with --cuda-device, give --processes 1 (the GPU "
            "computes a batch in parallel already).",
        ),
    ],
)
def test_a_bad_number_of_processes_is_refused_before_the_model_loads(
    fill_mask_archive, input_file, tmp_path, capsys, args, message
):
    loader = mock.Mock(side_effect=AssertionError("the model was loaded"))
    with mock.patch.object(embed, "load_language_model_archive", loader):
        with pytest.raises(SystemExit) as exit_info:
            run_cli(fill_mask_archive, str(input_file), str(tmp_path / "out.hdf5"), *args)
    assert exit_info.value.code == 2 and not loader.called
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(message)
    assert not (tmp_path / "out.hdf5.partial").exists()


def test_a_batch_that_fails_in_a_worker_fails_the_run_and_keeps_the_partial(
    fill_mask_archive, input_file, tmp_path
):
    output = tmp_path / "out.hdf5"
    args = (fill_mask_archive, str(input_file), str(output), "--processes", "2", "--batch-size", "2")
    failed = r"worker process failed on batch 000000000-\d+\.hdf5:\n(.|\n)*"
    # Each forked worker embeds one batch, then fails on its next: the written batches are kept.
    with mock.patch.object(RepresentationsPredictor, "vectors", crashing_after(1)):
        with pytest.raises(RuntimeError, match=failed + "crash"):
            run_cli(*args)
    assert not output.exists() and (tmp_path / "out.hdf5.partial" / "job.json").is_file()
    # A run whose workers fail before any batch is written leaves no partial: there is nothing to continue.
    with mock.patch.object(
        RepresentationsPredictor, "vectors", mock.Mock(side_effect=RuntimeError("no memory"))
    ):
        with pytest.raises(RuntimeError, match=failed + "no memory"):
            run_cli(*args[:2], str(tmp_path / "other.hdf5"), *args[3:])
    assert not (tmp_path / "other.hdf5").exists() and not (tmp_path / "other.hdf5.partial").exists()


def children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat", encoding="ascii") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(name))
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")  # a zombie has ended
    except FileNotFoundError:
        return False


def wait_until_ended(pids: list[int]) -> None:
    deadline = time.monotonic() + 60
    while any(alive(pid) for pid in pids):
        assert time.monotonic() < deadline, f"still running: {[pid for pid in pids if alive(pid)]}"
        time.sleep(0.05)


@pytest.mark.parametrize("stop", ["kill the parent", "kill a worker", "Ctrl-C"])
def test_a_run_stopped_in_any_process_continues_to_the_vectors_of_one_process(
    fill_mask_archive, tmp_path, stop
):
    # Its own process group, as a command started from a shell: Ctrl-C signals the whole group.
    process, args = start_stoppable_run(
        fill_mask_archive, tmp_path, "--processes", "2", start_new_session=True
    )
    output = args[2]
    workers = children(process.pid)
    assert len(workers) == 2
    if stop == "kill the parent":
        process.kill()
    elif stop == "kill a worker":
        os.kill(workers[0], signal.SIGKILL)
    else:
        os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=300)
    wait_until_ended(workers)  # none is left writing into the partial
    last = stderr.strip().splitlines()[-1]
    if stop == "kill the parent":
        assert process.returncode == -signal.SIGKILL
    else:
        assert "Traceback" not in stderr
        assert process.returncode == (1 if stop == "kill a worker" else 130)
        assert last.startswith(
            f"The worker process {workers[0]} was killed by signal SIGKILL: the vectors of "
            if stop == "kill a worker"
            else "Interrupted: the vectors of "
        )
        batches = [
            name for name in os.listdir(tmp_path / "out.hdf5.partial" / "batches") if name.endswith(".hdf5")
        ]
        # Counted on disk: a batch a worker wrote before it stopped counts though it was never reported.
        assert last.endswith(
            f" {2 * len(batches)} sentences are kept in {output}.partial; run the same command again to continue "
            f"from there."
        )
    assert_continued_to_the_uninterrupted_vectors(args, "--processes", "2")
