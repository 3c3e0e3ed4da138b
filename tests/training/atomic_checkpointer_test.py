import torch
from allennlp.common import Params
from allennlp.training.checkpointer import Checkpointer
from allennlp.training.trainer import TrainerCheckpoint

from maelmo_plugin.training.atomic_checkpointer import AtomicCheckpointer


class FakeTrainer:
    """What a checkpointer reads from AllenNLP's trainer."""

    def __init__(self, epochs, batches):
        self._epochs_completed, self._batches_in_epoch_completed = epochs, batches

    def get_checkpoint_state(self):
        state = {
            "epochs_completed": self._epochs_completed,
            "batches_in_epoch_completed": self._batches_in_epoch_completed,
        }
        return TrainerCheckpoint({"weight": torch.tensor([float(self._batches_in_epoch_completed)])}, state)


def checkpointer(directory, keep=2):
    return Checkpointer.from_params(
        Params({"type": "maelmo_atomic", "keep_most_recent_by_count": keep}), serialization_dir=str(directory)
    )


def test_is_built_from_a_config(tmp_path):
    assert isinstance(checkpointer(tmp_path), AtomicCheckpointer)


def test_a_checkpoint_interrupted_while_written_is_removed_and_the_previous_one_used(tmp_path):
    saver = checkpointer(tmp_path)
    saver.save_checkpoint(FakeTrainer(0, 2))
    # Killed while writing batch 4's checkpoint: a truncated model state and no training state.
    (tmp_path / "model_state_e0_b4.th").write_bytes(b"PK\x03\x04 truncated")
    model_state, training_state = checkpointer(tmp_path).load_checkpoint()
    assert training_state["batches_in_epoch_completed"] == 2 and model_state["weight"].item() == 2.0
    assert not (tmp_path / "model_state_e0_b4.th").exists()  # or AllenNLP would never rewrite it


def test_only_the_kept_checkpoints_keep_their_markers(tmp_path):
    saver = checkpointer(tmp_path, keep=2)
    for batches in (1, 2, 3, 4):
        saver.save_checkpoint(FakeTrainer(0, batches))
    markers = sorted(path.name for path in tmp_path.glob("*.done"))
    states = sorted(path.name for path in tmp_path.glob("model_state_*.th"))
    assert markers == ["checkpoint_e0_b3.done", "checkpoint_e0_b4.done"]
    assert states == ["model_state_e0_b3.th", "model_state_e0_b4.th"]
    assert checkpointer(tmp_path).find_latest_checkpoint()[0].endswith("model_state_e0_b4.th")
