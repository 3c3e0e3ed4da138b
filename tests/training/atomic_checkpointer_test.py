import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
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


@pytest.mark.parametrize("damaged", ["model_state", "training_state"])
def test_an_unreadable_newest_checkpoint_is_skipped_naming_it_and_the_previous_one_used(
    tmp_path, caplog, damaged
):
    saver = checkpointer(tmp_path, keep=3)
    for batches in (2, 4):
        saver.save_checkpoint(FakeTrainer(0, batches))
    # Complete and marked when written, truncated since (a full disk, a bad copy).
    newest = tmp_path / f"{damaged}_e0_b4.th"
    newest.write_bytes(newest.read_bytes()[:40])
    model_state, training_state = checkpointer(tmp_path).load_checkpoint()
    assert training_state["batches_in_epoch_completed"] == 2 and model_state["weight"].item() == 2.0
    assert f"Skipping the checkpoint {tmp_path / 'model_state_e0_b4.th'}" in caplog.text
    # Set aside, not deleted, and no longer found: the resumed run writes batch 4's checkpoint again.
    assert (tmp_path / f"{damaged}_e0_b4.th.unreadable").exists() and not newest.exists()
    saver = checkpointer(tmp_path, keep=3)
    saver.save_checkpoint(FakeTrainer(0, 4))
    assert checkpointer(tmp_path).load_checkpoint()[0]["weight"].item() == 4.0


def test_when_no_checkpoint_can_be_read_one_line_names_them(tmp_path):
    saver = checkpointer(tmp_path)
    for batches in (2, 4):
        saver.save_checkpoint(FakeTrainer(0, batches))
    for path in tmp_path.glob("model_state_*.th"):
        path.write_bytes(b"not a checkpoint")
    with pytest.raises(
        ConfigurationError,
        match="No checkpoint in .* can be read: .*model_state_e0_b4.th .*model_state_e0_b2.th",
    ):
        checkpointer(tmp_path).load_checkpoint()


def test_a_byte_flipped_inside_a_tensor_is_caught_by_the_recorded_sha256_and_the_previous_one_used(
    tmp_path, caplog
):
    """
    torch's zip reader checks no CRC: a checkpoint whose tensor changed since it was written loaded, and the
    resumed run trained on (issue 70). Its marker's sha256 now catches it.
    """
    saver = checkpointer(tmp_path, keep=3)
    for batches in (2, 4):
        saver.save_checkpoint(FakeTrainer(0, batches))
    newest = tmp_path / "model_state_e0_b4.th"
    content = newest.read_bytes()
    four = torch.tensor([4.0]).numpy().tobytes()
    assert content.count(four) == 1
    newest.write_bytes(content.replace(four, torch.tensor([5.0]).numpy().tobytes()))
    assert torch.load(newest)["weight"].item() == 5.0  # what torch alone would have served
    model_state, training_state = checkpointer(tmp_path).load_checkpoint()
    assert training_state["batches_in_epoch_completed"] == 2 and model_state["weight"].item() == 2.0
    assert f"Skipping the checkpoint {newest}: {newest} is not what was written" in caplog.text
    assert (tmp_path / "model_state_e0_b4.th.unreadable").exists()


def test_a_checkpoint_marked_before_markers_held_digests_still_loads(tmp_path):
    saver = checkpointer(tmp_path)
    saver.save_checkpoint(FakeTrainer(0, 3))
    (tmp_path / "checkpoint_e0_b3.done").write_text("")  # as written by 0.1.0
    assert checkpointer(tmp_path).load_checkpoint()[0]["weight"].item() == 3.0


def test_a_marked_checkpoint_whose_file_is_gone_is_skipped_not_a_traceback(tmp_path, caplog):
    saver = checkpointer(tmp_path, keep=3)
    for batches in (2, 4):
        saver.save_checkpoint(FakeTrainer(0, batches))
    (tmp_path / "training_state_e0_b4.th").unlink()
    model_state, training_state = checkpointer(tmp_path).load_checkpoint()
    assert training_state["batches_in_epoch_completed"] == 2 and model_state["weight"].item() == 2.0
    assert "training_state_e0_b4.th is not what was written" in caplog.text
