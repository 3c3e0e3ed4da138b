"""
Who embeds the batches of `allennlp maelmo-embed` (`pipeline.py`): this process (`--processes 1`), with torch's threads
splitting each product, or N worker processes (`--processes N`) of one thread each, a whole batch each:
an LSTM's products at a batch of 64 are small, one time step at a time, to split across threads.

The parent reads and tokenizes the input, forms the batches (the same in every run: `pipeline.py`) and
hands each missing one, by name, to the next free worker. A worker embeds whole batches with one torch
thread and writes each to its file in the partial directory (`write_batch_file`: complete or absent);
the parent counts it when the worker reports it. The output is merged by batch name, not in the order
the workers finish, and a batch's vectors do not depend on the process or the number of threads that
computed it (checked bit for bit for fp32, int8 and bf16 at 1, 2 and 4 threads), so `--processes N`
writes the file `--processes 1` writes, bit for bit, and a run stopped with one N continues with another.

The workers are forked (Linux): they share the parent's loaded model rather than each loading the
archive, and start in milliseconds. They ignore SIGINT (Ctrl-C reaches the whole process group: the
parent alone answers it, and stops them) and die with the parent (`PR_SET_PDEATHSIG`), so a `kill -9`
of the parent leaves no worker writing into a partial that the next run takes over. A worker that
stops (killed, out of memory) stops the run, the completed batches kept.
"""

import ctypes
import multiprocessing
import os
import queue
import signal
import threading
import traceback
from typing import Optional, Protocol

import numpy as np
import torch
from allennlp.data import Instance

from maelmo_declarations.refusals import Refusal
from maelmo_files.embedding.hdf5_layout import write_batch_file
from maelmo_plugin.embedding.job import EmbeddingJob
from maelmo_plugin.lm.predictors.representations import RepresentationsPredictor

# Batches handed out and not yet reported, per worker: one being embedded, one waiting, so that a worker
# never waits for the parent; more would only hold more instances in the queue.
IN_FLIGHT_PER_WORKER = 2
# How often (s) the parent, waiting for a batch, checks that every worker is still alive.
POLL_S = 0.2
PR_SET_PDEATHSIG = 1  # linux/prctl.h

# A batch: its file name, and its lines as (line index, instance), in the order they are embedded.
Batch = tuple[str, list[tuple[int, Instance]]]


class WorkerStopped(Exception):
    """A worker process ended before the run did (a kill, the kernel's out-of-memory killer)."""


def embed_batch(
    predictor: RepresentationsPredictor, path: str, lines: list[tuple[int, Instance]], storage: str
) -> int:
    """
    Embeds one batch and writes it to `path` (complete or absent), its vectors as `storage` ("float32" or
    "float16"); returns its number of sentences.
    """
    vectors = predictor.vectors([instance for _, instance in lines])
    return write_batch_file(
        path,
        (
            (index, stored(array, storage, index), predictor.listed_tokens(instance))
            for (index, instance), array in zip(lines, vectors)
        ),
    )


def stored(vectors: np.ndarray, storage: str, index: int) -> np.ndarray:
    """`vectors` as `storage`; a value beyond float16's range is refused, where a cast would store inf."""
    narrow = vectors.astype(storage, copy=False)
    if narrow is not vectors and not np.isfinite(narrow).all() and np.isfinite(vectors).all():
        raise Refusal(
            f"line {index + 1} has a vector value beyond {storage}'s range ({float(np.finfo(storage).max):,.0f}): "
            f"embed with --storage float32."
        )
    return narrow


class BatchEmbedder(Protocol):
    """
    Who embeds a run's batches, the one interface of `InProcess` and `Workers`: each batch is written to its
    file in the job's partial directory and counted in the job (`EmbeddingJob.add`) once complete.
    """

    def submit(self, batch: Batch) -> list[int]:
        """Hands `batch` over, at once; returns the sizes of the batches completed meanwhile."""

    def drain(self) -> list[int]:
        """Waits for every batch handed over; returns the sizes of those completed meanwhile."""

    def close(self, completed: bool) -> None:
        """Ends the backend: after `drain` when `completed`, otherwise at once (the completed batches kept)."""


class InProcess:
    """Embeds each batch here, when it is handed over (`BatchEmbedder`)."""

    def __init__(self, predictor: RepresentationsPredictor, job: EmbeddingJob) -> None:
        self._predictor = predictor
        self._job = job

    def submit(self, batch: Batch) -> list[int]:
        name, lines = batch
        self._job.add(
            name, embed_batch(self._predictor, self._job.batch_path(name), lines, self._job.storage)
        )
        return [len(lines)]

    def drain(self) -> list[int]:
        return []

    def close(self, completed: bool) -> None:
        pass


class Workers:
    """
    `processes` forked workers (`BatchEmbedder`), each embedding whole batches with one torch thread. `submit` hands a batch
    over and, while the workers have `IN_FLIGHT_PER_WORKER` each, waits for one to report; `drain` waits for
    all; `close` ends the workers (at once, by SIGTERM, unless the run completed).
    """

    def __init__(self, predictor: RepresentationsPredictor, job: EmbeddingJob, processes: int) -> None:
        context = multiprocessing.get_context("fork")
        self._job = job
        self._tasks: multiprocessing.Queue = context.Queue()
        self._results: multiprocessing.Queue = context.Queue()
        self._pending: dict[str, int] = {}  # name -> sentences, handed out and not reported
        self._limit = IN_FLIGHT_PER_WORKER * processes
        self._workers: list[multiprocessing.process.BaseProcess] = []
        # Ignored while forking, so that the workers inherit it: Ctrl-C reaches the parent alone. (Only
        # the main thread may set a handler; from another one, Ctrl-C reaches the main thread anyway.)
        main_thread = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
        try:
            for _ in range(processes):
                worker = context.Process(
                    target=_work,
                    args=(predictor, job.batches, job.storage, os.getpid(), self._tasks, self._results),
                    daemon=True,
                )
                worker.start()
                self._workers.append(worker)
        except BaseException:
            self.close(completed=False)
            raise
        finally:
            if main_thread:
                signal.signal(signal.SIGINT, previous)

    def submit(self, batch: Batch) -> list[int]:
        name, lines = batch
        self._tasks.put(batch)
        self._pending[name] = len(lines)
        completed = []
        while len(self._pending) >= self._limit:
            completed.append(self._next_result())
        return completed

    def drain(self) -> list[int]:
        completed = []
        while self._pending:
            completed.append(self._next_result())
        return completed

    def _next_result(self) -> int:
        while True:
            try:
                name, count, error = self._results.get(timeout=POLL_S)
                break
            except queue.Empty:
                self._check_alive()
        if error is not None:
            raise RuntimeError(f"A maelmo-embed worker process failed on batch {name}:\n{error}")
        del self._pending[name]
        self._job.add(name, count)
        return count

    def _check_alive(self) -> None:
        for worker in self._workers:
            # Status 0: a worker that failed on a batch, whose report is on its way (sent before it exited).
            if worker.exitcode not in (None, 0):
                how = (
                    f"was killed by signal {signal.Signals(-worker.exitcode).name}"
                    if worker.exitcode < 0
                    else f"exited with status {worker.exitcode}"
                )
                raise WorkerStopped(f"The worker process {worker.pid} {how}")

    def close(self, completed: bool) -> None:
        if completed:
            for _ in self._workers:
                self._tasks.put(None)
        else:
            for worker in self._workers:
                if worker.exitcode is None:
                    worker.terminate()  # mid-batch, it leaves a temporary file, removed on resume
        for worker in self._workers:
            worker.join()
        for channel in (self._tasks, self._results):
            channel.close()
            channel.cancel_join_thread()  # a batch no worker took is dropped, not waited for
        if not completed:
            self._job.recount()  # batches written and not yet reported count too


def _work(
    predictor: RepresentationsPredictor,
    batches: str,
    storage: str,
    parent: int,
    tasks: multiprocessing.Queue,
    results: multiprocessing.Queue,
) -> None:
    _die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # when forked from another thread than the main one
    torch.set_num_threads(1)
    while True:
        batch: Optional[Batch] = tasks.get()
        if batch is None:
            return
        name, lines = batch
        try:
            count = embed_batch(predictor, os.path.join(batches, name), lines, storage)
        except Exception:
            results.put((name, None, traceback.format_exc()))
            return
        results.put((name, count, None))


def _die_with(parent: int) -> None:
    """Has the kernel kill this process when its parent ends, however it ends."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0 or os.getppid() != parent:
        os._exit(1)  # the parent ended before the request took effect
