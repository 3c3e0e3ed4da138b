"""
Who trains an arena's runs. Each run is `allennlp train` in a process of its own (`-r` where it stopped), and a
worker takes a run only under the run's lock, so that workers share one arena folder: several on one machine
(`--core N` each), or the workers torchrun starts on one or many machines over a shared folder, each worker then
training on its own GPU (`LOCAL_RANK`) or core. A lock is released when its worker ends or dies, so a killed
worker's run is taken by the next worker to reach it, which continues it from its last checkpoint.
"""

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Optional

from maelmo_plugin.training.torchrun import TORCHRUN_VARIABLES, WORKER_VARIABLES, under_torchrun


class RunFailed(RuntimeError):
    """A run's own `allennlp` process failed; its log says why."""


@dataclass(frozen=True)
class Worker:
    core: Optional[
        int
    ]  # the CPU core the runs are pinned to, with one thread (so that their seconds compare)
    cuda_device: int  # -1: CPU

    @staticmethod
    def of(core: Optional[int], gpu: bool) -> "Worker":
        """This process's worker: under torchrun, its local rank picks its GPU (with `gpu`) or, without
        `core`, its core."""
        local_rank = int(os.environ["LOCAL_RANK"]) if under_torchrun() else 0
        if core is None and under_torchrun() and not gpu:
            core = local_rank
        return Worker(core, local_rank if gpu else -1)

    def environment(self, variables: Optional[dict[str, str]] = None) -> dict[str, str]:
        # A run is one process of its own, not a worker of torchrun's group: it must not see the group's variables.
        group = {*TORCHRUN_VARIABLES, *WORKER_VARIABLES}
        environment = {
            name: value
            for name, value in os.environ.items()
            if name not in group and not name.startswith("TORCHELASTIC_")
        }
        if self.core is not None:
            environment.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        return {**environment, **(variables or {})}

    def allennlp(
        self,
        arguments: list[str],
        log: Path,
        variables: Optional[dict[str, str]] = None,
        lock: Optional[IO] = None,
        cwd: Optional[Path] = None,
    ) -> None:
        """`allennlp ARGUMENTS` with the plugin, logged to `log`; a failure names the log. The process holds
        `lock` too (a run's, from `taken`): a worker killed while it trains leaves the run locked until the
        training process has ended as well, so that no other worker trains it beside it."""
        command = [sys.executable, "-m", "allennlp", *arguments, "--include-package", "maelmo_plugin"]
        if self.core is not None:
            command = ["taskset", "-c", str(self.core), *command]
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as out:
            finished = subprocess.run(
                command,
                cwd=cwd,
                env=self.environment(variables),
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
                pass_fds=(lock.fileno(),) if lock else (),
            )
        if finished.returncode:
            raise RunFailed(
                f"`allennlp {arguments[0]}` failed (exit {finished.returncode}: {last_words(log)}): see {log}"
            )

    def train(
        self,
        config: Path,
        folder: Path,
        log: Path,
        variables: Optional[dict[str, str]] = None,
        lock: Optional[IO] = None,
    ) -> None:
        """`allennlp train CONFIG -s FOLDER`: resumed (-r) from its last checkpoint where one was stopped."""
        self.allennlp(train_arguments(config, folder), log, variables, lock)


def last_words(log: Path, limit: int = 400) -> str:
    """The last line a failed run wrote (AllenNLP's error, after its traceback), so that the one line a stopped
    arena prints says why, and the log says the rest; shortened past `limit` characters."""
    with open(log, "rb") as out:
        out.seek(max(0, out.seek(0, os.SEEK_END) - 64 * 1024))  # a traceback's end, not a whole run's log
        lines = [line.strip() for line in out.read().decode("utf-8", "replace").splitlines() if line.strip()]
    said = lines[-1] if lines else "it wrote nothing"
    return said if len(said) <= limit else said[: limit - 3] + "..."


def train_arguments(config: Path, folder: Path) -> list[str]:
    """`train CONFIG -s FOLDER`, with `-r` where FOLDER holds a checkpoint to resume from; a FOLDER without one
    (the run's own, stopped before its first checkpoint) is removed first, as it holds nothing to resume."""
    resume = folder.is_dir() and any(folder.glob("*.th"))
    if folder.exists() and not resume:
        shutil.rmtree(folder)
    return ["train", str(config), "-s", str(folder), "--file-friendly-logging", *(["-r"] if resume else [])]


@contextlib.contextmanager
def taken(lock: Path) -> Iterator[Optional[IO]]:
    """The open `lock` if this worker got it, else None; held for the block, released when it ends or the worker
    (and any process it passed the lock to) dies: never stale."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        yield held


@contextlib.contextmanager
def waited(lock: Path) -> Iterator[IO]:
    """The open `lock`, once the worker that holds it has finished (or died)."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield held
