import json
from types import SimpleNamespace

import torch

from maelmo_plugin.training.throughput_callback import ThroughputCallback


def test_each_epoch_record_counts_wordpieces_and_the_updates_so_far(tmp_path):
    callback = ThroughputCallback(str(tmp_path))
    # AllenNLP's trainer counts optimizer steps (one per gradient-accumulation group) in this attribute.
    trainer = SimpleNamespace(_total_batches_completed=0)
    callback.on_start(trainer)
    batch = {"tokens": {"tokens": {"tokens": torch.tensor([[5, 6, 7], [8, 0, 0]])}}}  # 4 word-pieces, 2 pads
    for epoch, updates in enumerate((3, 6)):
        for _ in range(3):
            callback.on_batch(trainer, [batch], [{}], {}, epoch, 1, is_training=True)
        trainer._total_batches_completed = updates
        callback.on_epoch(trainer, {}, epoch)
    records = json.loads((tmp_path / "throughput.json").read_text())
    assert [(record["epoch"], record["wordpieces"], record["updates"]) for record in records] == [
        (0, 12, 3),
        (1, 12, 6),
    ]
