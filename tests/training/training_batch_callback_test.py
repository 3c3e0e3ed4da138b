from types import SimpleNamespace

import pytest

from maelmo_plugin.training.training_batch_callback import TrainingBatchCallback


class Recorder(TrainingBatchCallback):
    def __init__(self, serialization_dir: str) -> None:
        super().__init__(serialization_dir)
        self.calls: list[tuple] = []

    def on_training_batch(self, trainer, batch_inputs, epoch, is_primary) -> None:
        self.calls.append((trainer, batch_inputs, epoch, is_primary))


def test_only_training_batches_reach_on_training_batch_with_their_inputs_epoch_and_rank(tmp_path):
    callback, trainer, batch = Recorder(str(tmp_path)), SimpleNamespace(), {"tokens": {}}
    callback.on_batch(trainer, [batch], [{}], {}, 2, 1, is_training=False)
    callback.on_batch(trainer, [batch], [{}], {}, 2, 1, is_training=True, is_primary=False)
    callback.on_batch(trainer, [batch], [{}], {}, 3, 1, is_training=True, batch_grad_norm=0.5)
    assert callback.calls == [(trainer, [batch], 2, False), (trainer, [batch], 3, True)]


def test_a_callback_without_its_hook_is_refused_when_built(tmp_path):
    """`on_training_batch` is abstract: a subclass that forgets it fails at construction, not at the first batch."""

    class Forgetful(TrainingBatchCallback):
        pass

    with pytest.raises(TypeError, match="on_training_batch"):
        Forgetful(str(tmp_path))
