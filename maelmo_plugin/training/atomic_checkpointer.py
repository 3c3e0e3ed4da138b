"""
A checkpointer that a crash in the middle of writing a checkpoint cannot corrupt.
"""
import glob
import logging
import os
from typing import Optional, Set, Tuple

from allennlp.training.checkpointer import Checkpointer

logger = logging.getLogger(__name__)


@Checkpointer.register("maelmo_atomic")
class AtomicCheckpointer(Checkpointer):
    """
    AllenNLP's `Checkpointer`, safe against a process killed while it writes. AllenNLP writes
    `model_state_e*_b*.th` and then `training_state_e*_b*.th` in place and, on `allennlp train -r`, resumes
    from the newest model state it finds. A kill during either write leaves a truncated file or a model state
    without its training state, and the resumed run fails on it; worse, AllenNLP never rewrites an existing
    file, so the truncated file would later be taken as a good checkpoint.

    Here a checkpoint counts only once a `checkpoint_e*_b*.done` marker is written after both files. On
    resume, the newest marked checkpoint is used and unmarked files are deleted (logged), so a crash costs
    at most the work since the previous checkpoint. Every argument is AllenNLP's `Checkpointer`'s
    (`save_every_num_seconds`, `save_every_num_batches`, `keep_most_recent_by_count`, ...).

    Registered as a `Checkpointer` with name "maelmo_atomic".
    """

    def save_checkpoint(self, trainer) -> None:
        super().save_checkpoint(trainer)
        if self._serialization_dir is None or not self._is_primary:
            return
        epochs = trainer._epochs_completed
        batches = trainer._batches_in_epoch_completed
        with open(self._marker_path(epochs, batches), "w"):
            pass
        # AllenNLP pruned before this checkpoint counted; prune again so no more than asked stay on disk.
        if self._keep_most_recent_by_count is not None and self._keep_most_recent_by_age is None:
            for point in sorted(self._find_all_checkpoints(), reverse=True)[self._keep_most_recent_by_count :]:
                self._remove_checkpoint(*point)

    def _find_all_checkpoints(self) -> Set[Tuple[int, int]]:
        return {point for point in super()._find_all_checkpoints() if os.path.exists(self._marker_path(*point))}

    def _remove_checkpoint(self, epochs_completed: int, batches_in_epoch_completed: int) -> None:
        # The marker goes first: a kill half-way through leaves an unmarked checkpoint, which is ignored.
        marker = self._marker_path(epochs_completed, batches_in_epoch_completed)
        if os.path.exists(marker):
            os.remove(marker)
        super()._remove_checkpoint(epochs_completed, batches_in_epoch_completed)

    def find_latest_checkpoint(self) -> Optional[Tuple[str, str]]:
        self._remove_unfinished_checkpoints()
        return super().find_latest_checkpoint()

    def _remove_unfinished_checkpoints(self) -> None:
        if self._serialization_dir is None:
            return
        pattern = os.path.join(self._serialization_dir, "*_state_e*_b*.th")
        for path in glob.glob(pattern):
            point = self._parse_model_state_path(path) or self._parse_training_state_path(path)
            if point is not None and not os.path.exists(self._marker_path(*point)):
                logger.warning("Removing %s: its checkpoint was not finished (the run stopped while writing it).", path)
                os.remove(path)

    def _marker_path(self, epochs_completed: int, batches_in_epoch_completed: int) -> str:
        return os.path.join(
            self._serialization_dir, f"checkpoint_e{epochs_completed}_b{batches_in_epoch_completed}.done"
        )
