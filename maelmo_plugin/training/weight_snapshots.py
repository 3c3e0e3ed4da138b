"""
The model's weights at chosen updates of a run, for what needs the same run at several points of its training
(for example, fine-tuning one pre-training run at several perplexities to see what a downstream probe can tell).
"""

import io
import logging
import os
import tarfile
from pathlib import Path

import torch
from allennlp.data import TensorDict
from allennlp.training.callbacks.callback import TrainerCallback

from maelmo_plugin.common.integrity import ARCHIVE_MANIFEST, with_member_sha256
from maelmo_plugin.training.training_batch_callback import TrainingBatchCallback

logger = logging.getLogger(__name__)


@TrainerCallback.register("maelmo_weight_snapshots")
class WeightSnapshotsCallback(TrainingBatchCallback):
    """
    Saves the model's `state_dict` after each optimizer step listed in `at_updates`, to
    `snapshots/weights_update<N>.th` in the serialization directory (written to a partial file and moved into
    place, so a file there is always whole). It only reads the weights: the run trains exactly as it would
    without it. A resumed run (`-r`) writes again the snapshots after its checkpoint, which are the same
    weights. `archive_with_weights` (below) turns a snapshot into an archive like the run's own.

    Registered as a `TrainerCallback` with name "maelmo_weight_snapshots".

    # Parameters

    serialization_dir : `str`
        Passed by AllenNLP.
    at_updates : `list[int]`
        The optimizer steps (counted over the whole run, from 1) after which to save the weights.
    """

    def __init__(self, serialization_dir: str, at_updates: list[int]) -> None:
        super().__init__(serialization_dir)
        if not at_updates or min(at_updates) < 1:
            raise ValueError(
                f"maelmo_weight_snapshots' at_updates must be a non-empty list of updates >= 1, got {at_updates}."
            )
        self._at = set(at_updates)

    def on_training_batch(
        self, trainer, batch_inputs: list[TensorDict], epoch: int, is_primary: bool
    ) -> None:
        updates = int(trainer._total_batches_completed)
        if not (is_primary and updates in self._at):
            return
        path = snapshot_path(self.serialization_dir, updates)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        torch.save(trainer.model.state_dict(), partial)
        os.replace(partial, path)
        logger.info("Saved the weights after update %d to %s", updates, path)


def snapshot_path(serialization_dir, updates: int) -> Path:
    return Path(serialization_dir) / "snapshots" / f"weights_update{updates}.th"


def archive_with_weights(archive, weights, output) -> Path:
    """A copy of the AllenNLP `archive` (`model.tar.gz`) whose `weights.th` is `weights` (a snapshot), written to
    a partial file and moved to `output`: the same config, vocabulary and assets, so it loads wherever the
    run's own archive does."""
    output = Path(output)
    partial = output.with_name(output.name + ".partial")
    with tarfile.open(archive, "r:gz") as source, tarfile.open(partial, "w:gz") as target:
        for member in source.getmembers():
            name = member.name.lstrip("./")
            if name == "weights.th":
                continue
            stream = source.extractfile(member) if member.isfile() else None
            if name == ARCHIVE_MANIFEST and stream is not None:
                # The list of sha256 the archive is checked against at load: the snapshot's, for weights.th.
                content = with_member_sha256(stream.read(), "weights.th", str(weights))
                member.size = len(content)
                target.addfile(member, io.BytesIO(content))
                continue
            target.addfile(member, stream)
        target.add(str(weights), arcname="weights.th")
    os.replace(partial, output)
    return output
