"""
The partial directory of an `allennlp maelmo-embed` run, `OUTPUT.partial/`, which lets a run that stops at
any point (an error, Ctrl-C, `kill -9`, a crash) continue when the same command is run again:

    OUTPUT.partial/job.json            what the vectors depend on (the fingerprint, below)
    OUTPUT.partial/lock                flock'ed by the run that writes here (process id inside)
    OUTPUT.partial/batches/W-B.hdf5    the vectors of batch B of window W, one file per completed batch

A batch's file is written under a temporary name (the writer's process id in it), closed, and renamed: a
file under its final name is complete, and a killed run, or a killed worker process of `--processes N`,
leaves at most a temporary file, removed on resume. (One HDF5 file flushed
after each batch is not enough: HDF5 updates its metadata in place, and a process killed while writing it
leaves a file HDF5 cannot open.) When every batch is written, the batches are copied into one HDF5 file in
`allennlp elmo`'s layout, which is moved onto OUTPUT; then the directory is removed.

A partial with another fingerprint (`fingerprint.py`: what decides the vectors, bit for bit) is refused,
naming what changed: its vectors would differ from the new run's. The job is checked in two steps, so that
everything but the model is checked before the model loads: `EmbeddingJob.start` with the model unknown
(None), then `set_model` once it is loaded.
"""

import json
import os
import shutil
from collections.abc import Callable, Iterable
from typing import Any, Optional

import h5py
import numpy as np

from maelmo_declarations import owned_outputs
from maelmo_declarations.refusals import Refusal
from maelmo_files.common.partial_output import PartialLock, partial_directory, remove_owned
from maelmo_files.embedding.differences import differences
from maelmo_files.embedding.hdf5_layout import (
    LIBVER,
    complete_batch_count,
    copy_line_datasets,
    write_batch_file,
    write_sentence_to_index,
)

# What a run writes in its partial directory (besides its lock): anything else there is not its own.
MERGED = "output.hdf5"
COMMAND = "maelmo-embed"  # whose output the file is, in its manifest (maelmo_declarations/owned_outputs.py)
OWNED = frozenset({"job.json", "job.json.tmp", "batches", MERGED})


class EmbeddingJob:
    """
    The partial directory of one output, locked by this process. `start` checks the output path and takes
    the lock (before any model is loaded); `write_batch` adds a completed batch (or `add`, for a batch a
    worker process wrote to `batch_path`); `finish` moves the whole output into place; `discard` removes the
    partial (an input error: it cannot be continued).
    """

    def __init__(
        self, output_file: str, lock: PartialLock, completed: dict[str, int], fingerprint: dict[str, Any]
    ) -> None:
        self.output_file = output_file
        self.fingerprint = fingerprint
        self.directory = owned_outputs.partial_path(output_file)
        self.batches = os.path.join(self.directory, "batches")
        self._lock = lock
        self.completed = completed  # batch file name -> number of sentences

    @classmethod
    def start(cls, output_file: str, fingerprint: dict[str, Any], force: bool) -> "EmbeddingJob":
        owned_outputs.check_file_output(output_file, COMMAND, force, example="vectors.hdf5")
        directory, lock = partial_directory(output_file, OWNED, COMMAND)
        try:
            # Again under the lock: a run that held it may have just finished the output.
            owned_outputs.check_file_output(output_file, COMMAND, force, example="vectors.hdf5")
            completed = cls._resume(directory, fingerprint, force)
        except BaseException:
            lock.release()
            raise
        return cls(output_file, lock, completed, fingerprint)

    def set_model(self, model: dict[str, Any], force: bool) -> None:
        """
        The loaded model's fingerprint (`weights_fingerprint`): a partial of another model is refused, or
        with `force` its batches are discarded.
        """
        recorded = _read_json(os.path.join(self.directory, "job.json")).get("model")
        if recorded not in (None, model):
            if not force:
                raise Refusal(
                    f"{self.directory} holds an unfinished maelmo-embed run of another model, whose vectors "
                    f"would differ from this one's: run the command it was started with to finish it, or give "
                    f"--force to discard it and start over."
                )
            shutil.rmtree(self.batches, ignore_errors=True)
            os.makedirs(self.batches)
            self.completed = {}
        self.fingerprint = {**self.fingerprint, "model": model}
        _write_json(os.path.join(self.directory, "job.json"), self.fingerprint)

    @staticmethod
    def _resume(directory: str, fingerprint: dict[str, Any], force: bool) -> dict[str, int]:
        job_file, batches = os.path.join(directory, "job.json"), os.path.join(directory, "batches")
        if os.path.islink(batches) or (os.path.lexists(batches) and not os.path.isdir(batches)):
            raise Refusal(
                f"{batches} is a link or a file, not the batches' directory maelmo-embed writes: move "
                f"{directory} away and run the command again."
            )
        if os.path.exists(job_file):
            recorded = _read_json(job_file)
            if fingerprint["model"] is None:  # not loaded yet: `set_model` compares it
                fingerprint = {**fingerprint, "model": recorded.get("model")}
            changed = differences(recorded, fingerprint)
            if changed and not force:
                raise Refusal(
                    f"{directory} holds an unfinished maelmo-embed run whose vectors would differ from this "
                    f"one's ({'; '.join(changed)}): run the command it was started with to finish it, or give "
                    f"--force to discard it and start over."
                )
            if changed:
                shutil.rmtree(batches, ignore_errors=True)
        os.makedirs(batches, exist_ok=True)
        _write_json(job_file, fingerprint)
        return _completed_batches(batches, remove_incomplete=True)

    @property
    def storage(self) -> str:
        """The vectors' type in the file: an option of the fingerprint, recorded only when not float32."""
        return str(self.fingerprint["options"].get("storage", "float32"))

    @staticmethod
    def batch_name(window: int, batch: int) -> str:
        return f"{window:09d}-{batch:06d}.hdf5"

    @property
    def num_written(self) -> int:
        return sum(self.completed.values())

    @property
    def written_bytes(self) -> int:
        """What the completed batches hold on disk (a stopped run's, when it continues)."""
        return sum(os.path.getsize(self.batch_path(name)) for name in self.completed)

    def batch_path(self, name: str) -> str:
        return os.path.join(self.batches, name)

    def write_batch(self, name: str, lines: Iterable[tuple[int, np.ndarray, list[str]]]) -> None:
        """Writes a batch's `(line index, vectors, tokens)` (see `write_batch_file`)."""
        self.add(name, write_batch_file(self.batch_path(name), lines))

    def add(self, name: str, count: int) -> None:
        """Counts a batch of `count` sentences as complete: its file is under its final name."""
        self.completed[name] = count

    def recount(self) -> None:
        """Counts again the batches on disk: after worker processes stopped, some wrote one not yet added."""
        self.completed = _completed_batches(self.batches, remove_incomplete=False)

    def finish(
        self,
        sentence_to_index: dict[str, str],
        attributes: Optional[Callable[[h5py.File], dict[str, str]]] = None,
    ) -> None:
        """
        Copies the batches into one file in `allennlp elmo`'s layout, with the root attributes that
        `attributes` gives for the written file (a shard's record: `maelmo_files/embedding/shards.py`), and
        moves it onto the output.
        """
        merged = remove_owned(self.directory, MERGED)
        with h5py.File(merged, "x", libver=LIBVER) as output:
            for name in sorted(self.completed):
                copy_line_datasets(os.path.join(self.batches, name), output)
            write_sentence_to_index(output, sentence_to_index)
            for name, value in (attributes(output) if attributes else {}).items():
                output.attrs[name] = value
        os.replace(merged, self.output_file)
        owned_outputs.write_manifest(self.output_file, COMMAND, directory=False)
        self.discard()

    def discard(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
        self.release()

    def stop(self) -> None:
        """Ends a run that did not complete: the partial stays to continue from, unless it holds no sentence."""
        if self.num_written == 0:
            self.discard()
        else:
            self.release()

    def release(self) -> None:
        self._lock.release()


def _completed_batches(batches: str, remove_incomplete: bool) -> dict[str, int]:
    """The complete batch files in `batches` by name, with their number of sentences."""
    completed = {}
    for name in sorted(os.listdir(batches)):
        path = os.path.join(batches, name)
        count = complete_batch_count(path) if name.endswith(".hdf5") else None
        if count is not None:
            completed[name] = count
        elif remove_incomplete:  # a batch file being written when the run stopped
            os.remove(path)
    return completed


def _read_json(path: str) -> dict[str, Any]:
    """A partial's job.json; {} if there is none."""
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as stream:
        content = json.load(stream)
    return content if isinstance(content, dict) else {}


def written_sentences(output_file: str) -> int:
    """How many sentences the partial of `output_file` holds (for the message of a stopped run)."""
    batches = os.path.join(owned_outputs.partial_path(output_file), "batches")
    if not os.path.isdir(batches) or os.path.islink(batches):
        return 0
    return sum(_completed_batches(batches, remove_incomplete=False).values())


def _write_json(path: str, content: dict[str, Any]) -> None:
    with open(path + ".tmp", "w", encoding="utf-8") as stream:
        json.dump(content, stream, indent=2)
    os.replace(path + ".tmp", path)
