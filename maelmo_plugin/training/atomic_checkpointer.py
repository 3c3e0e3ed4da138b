"""
A checkpointer that a crash in the middle of writing a checkpoint cannot corrupt.
"""

import glob
import json
import logging
import os
import shutil
import time
from typing import Optional

import torch
import torch.distributed as dist
from allennlp.common.checks import ConfigurationError
from allennlp.common.util import is_distributed
from allennlp.nn.util import device_mapping, distributed_device
from allennlp.training.checkpointer import Checkpointer
from allennlp.training.trainer import TrainerCheckpoint

from maelmo_plugin.common.integrity import checkpoint_digests, checkpoint_mismatch

logger = logging.getLogger(__name__)


@Checkpointer.register("maelmo_atomic")
class AtomicCheckpointer(Checkpointer):
    """
    AllenNLP's `Checkpointer`, safe against a process killed while it writes. AllenNLP writes
    `model_state_e*_b*.th` and then `training_state_e*_b*.th` in place and, on `allennlp train -r`, resumes
    from the newest model state it finds. A kill during either write leaves a truncated file or a model state
    without its training state, and the resumed run fails on it; worse, AllenNLP never rewrites an existing
    file, so the truncated file would later be taken as a good checkpoint.

    Here a checkpoint counts only once a `checkpoint_e*_b*.done` marker, which records both files' sha256, is
    written after them. On
    resume, the newest marked checkpoint is used and unmarked files are deleted (logged), so a crash costs
    at most the work since the previous checkpoint. A marked checkpoint that cannot be read or whose bytes are
    not the ones its marker records (truncated or damaged since: a full disk, a bad copy) is skipped with a warning naming it and moved aside
    (`*.unreadable`, kept for inspection, so that the resumed run writes that checkpoint again), and the
    previous one is used; when none can be read, one line names them all. A resumed checkpoint that ends the best
    epoch also restores `best.th` from its weights, which a stop right after the checkpoint leaves missing or
    stale (`_best_from`). Every argument is AllenNLP's `Checkpointer`'s
    (`save_every_num_seconds`, `save_every_num_batches`, `keep_most_recent_by_count`, ...).

    `save_every_num_seconds` also works in distributed training, where AllenNLP refuses it (each worker's
    clock would pick another batch): after every batch the workers all-reduce whether any of them has
    reached the interval, so all of them save after the same batch. Before any save, every worker hands
    its own state to the `maelmo_exact_resume` callback (`before_checkpoint`), which gathers them into
    the checkpoint, so that `-r` restores each worker's, not the first worker's.

    Registered as a `Checkpointer` with name "maelmo_atomic".
    """

    def __init__(
        self, serialization_dir: str, save_every_num_seconds: Optional[float] = None, **kwargs
    ) -> None:
        self._agreed_seconds = save_every_num_seconds if is_distributed() else None
        if self._agreed_seconds is not None:
            save_every_num_seconds = None  # AllenNLP's own clock check raises under DDP; ours agrees
        super().__init__(serialization_dir, save_every_num_seconds=save_every_num_seconds, **kwargs)

    def maybe_save_checkpoint(
        self, trainer, num_epochs_completed: int, num_batches_in_epoch_completed: int
    ) -> bool:
        if self._agreed_seconds is not None:
            # Every worker calls this after the same batch, so the all-reduce pairs up across workers.
            due = torch.tensor(int(time.time() - self._last_save_time >= self._agreed_seconds))
            due = due.to(distributed_device())
            dist.all_reduce(due, op=dist.ReduceOp.MAX)
            if due.item():
                self.save_checkpoint(trainer)
                return True
        return super().maybe_save_checkpoint(trainer, num_epochs_completed, num_batches_in_epoch_completed)

    def save_checkpoint(self, trainer) -> None:
        # Every worker gets here for every save (maybe_save_checkpoint runs on all of them): gather now.
        for callback in getattr(trainer, "_callbacks", []):
            if hasattr(callback, "before_checkpoint"):
                callback.before_checkpoint()
        super().save_checkpoint(trainer)
        # AllenNLP updates when it last saved only where it wrote files: the other workers would then find a
        # save due after every batch and enter the gathering above alone, and wait for ever.
        self._last_save_time = time.time()
        self._last_save_num_epochs_completed = trainer._epochs_completed
        self._last_save_num_batches_in_epoch_completed = trainer._batches_in_epoch_completed
        # The files were written by each node's first worker (AllenNLP's trainer._primary), not only by the
        # first worker of all: every node that wrote a checkpoint marks it, in its own directory.
        if self._serialization_dir is None or not getattr(trainer, "_primary", self._is_primary):
            return
        epochs = trainer._epochs_completed
        batches = trainer._batches_in_epoch_completed
        # The marker records each file's sha256, which a resumed run checks: torch's zip reader checks none.
        paths = (self._model_state_path(epochs, batches), self._training_state_path(epochs, batches))
        digests = checkpoint_digests(path for path in paths if os.path.isfile(path))
        marker = self._marker_path(epochs, batches)
        with open(marker + ".tmp", "w", encoding="utf-8") as stream:
            json.dump(digests, stream)
        os.replace(marker + ".tmp", marker)
        # AllenNLP pruned before this checkpoint counted; prune again so no more than asked stay on disk.
        if self._keep_most_recent_by_count is not None and self._keep_most_recent_by_age is None:
            for point in sorted(self._find_all_checkpoints(), reverse=True)[
                self._keep_most_recent_by_count :
            ]:
                self._remove_checkpoint(*point)

    def _find_all_checkpoints(self) -> set[tuple[int, int]]:
        return {
            point for point in super()._find_all_checkpoints() if os.path.exists(self._marker_path(*point))
        }

    def _remove_checkpoint(self, epochs_completed: int, batches_in_epoch_completed: int) -> None:
        # The marker goes first: a kill half-way through leaves an unmarked checkpoint, which is ignored.
        marker = self._marker_path(epochs_completed, batches_in_epoch_completed)
        if os.path.exists(marker):
            os.remove(marker)
        super()._remove_checkpoint(epochs_completed, batches_in_epoch_completed)

    def load_checkpoint(self) -> Optional[TrainerCheckpoint]:
        self._remove_unfinished_checkpoints()
        unreadable = []
        for point in sorted(self._find_all_checkpoints(), reverse=True):
            paths = (self._model_state_path(*point), self._training_state_path(*point))
            damaged = checkpoint_mismatch(self._marker_path(*point), paths)
            if damaged is not None:
                unreadable.append(f"{damaged} (its sha256 is not the one recorded when it was written)")
                logger.warning(
                    "Skipping the checkpoint %s: %s is not what was written (its sha256 differs from the one its "
                    "marker records: damaged since); trying the one before it.",
                    paths[0],
                    damaged,
                )
                self._set_aside(point, paths)
                continue
            try:
                # As AllenNLP's: onto the CPU first; the GPU copy happens in load_state_dict.
                states = [torch.load(path, map_location=device_mapping(-1)) for path in paths]
            except Exception as error:  # noqa: BLE001 - any failure to read is a damaged checkpoint
                unreadable.append(f"{paths[0]} ({type(error).__name__})")
                logger.warning(
                    "Skipping the checkpoint %s: it cannot be read (%s: %s); trying the one before it.",
                    paths[0],
                    type(error).__name__,
                    str(error).splitlines()[0] if str(error) else "",
                )
                self._set_aside(point, paths)
                continue
            self._best_from(point, paths[0], states[1])
            return TrainerCheckpoint(*states)
        if unreadable:
            raise ConfigurationError(
                f"No checkpoint in {self._serialization_dir} can be read: {'; '.join(unreadable)}. They were "
                f"moved aside (*.unreadable); run the same command again to start from the beginning, or "
                f"restore the files from a copy."
            )
        return None

    def _best_from(self, point: tuple[int, int], model_state: str, training_state: dict) -> None:
        """
        `best.th` made the resumed checkpoint's weights where that checkpoint ends the best epoch. AllenNLP writes
        `best.th` only after the epoch's checkpoint, from it: a run stopped in between has it missing (a first
        best) or an earlier epoch's (a later best), and when that checkpoint ends the last epoch, `-r` trains
        nothing and archives `best.th` as found: an error at every attempt, or the wrong weights. A moving average
        writes `best.th` from weights no checkpoint holds, and a sharded model each worker's `best_w*.th`: both are
        left as they are.
        """
        epochs, batches = point
        tracker = training_state.get("metric_tracker") or {}
        if (
            batches != 0
            or tracker.get("best_epoch") != epochs - 1
            or training_state.get("moving_average") is not None
            or self._serialization_dir is None
            or glob.glob(os.path.join(self._serialization_dir, "best_w*.th"))
        ):
            return
        best = os.path.join(self._serialization_dir, "best.th")
        training_state["best_model_filename"] = best
        if not self._is_primary or (os.path.isfile(best) and os.path.samefile(best, model_state)):
            return  # AllenNLP's own hard link: already these weights
        logger.warning(
            "Writing %s from %s, the best epoch's checkpoint (the run stopped before it had).",
            best,
            model_state,
        )
        partial = best + ".partial"
        shutil.copyfile(model_state, partial)
        os.replace(partial, best)

    def _set_aside(self, point: tuple[int, int], paths: tuple[str, str]) -> None:
        """An unreadable checkpoint's files become `*.unreadable` (by the primary only), marker first."""
        if not self._is_primary:
            return
        for path in (self._marker_path(*point), *paths):
            if os.path.exists(path):
                os.replace(path, path + ".unreadable")

    def find_latest_checkpoint(self) -> Optional[tuple[str, str]]:
        self._remove_unfinished_checkpoints()
        return super().find_latest_checkpoint()

    def _remove_unfinished_checkpoints(self) -> None:
        if self._serialization_dir is None:
            return
        pattern = os.path.join(self._serialization_dir, "*_state_e*_b*.th")
        for path in glob.glob(pattern):
            point = self._parse_model_state_path(path) or self._parse_training_state_path(path)
            if point is not None and not os.path.exists(self._marker_path(*point)):
                logger.warning(
                    "Removing %s: its checkpoint was not finished (the run stopped while writing it).", path
                )
                os.remove(path)

    def _marker_path(self, epochs_completed: int, batches_in_epoch_completed: int) -> str:
        return os.path.join(
            self._serialization_dir, f"checkpoint_e{epochs_completed}_b{batches_in_epoch_completed}.done"
        )
