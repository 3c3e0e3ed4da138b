import json

import pytest
import torch
from allennlp.commands.train import train_model_from_file

from tests import FIXTURES_ROOT

CONFIG = str(FIXTURES_ROOT / "lm" / "experiment.jsonnet")


def train(directory, callbacks):
    overrides = {"trainer.num_epochs": 2, "trainer.callbacks": callbacks, "model.encoder.dropout": 0.2}
    train_model_from_file(CONFIG, str(directory), overrides=json.dumps(overrides))
    metrics = json.loads((directory / "metrics.json").read_text())
    return metrics, torch.load(directory / "best.th", weights_only=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("curve")
    with_curve = train(root / "with", [{"type": "maelmo_validation_curve", "every_updates": 2}])
    without = train(root / "without", [])
    return with_curve, without, root / "with"


def test_the_curve_does_not_change_the_run(runs):
    (metrics, weights), (plain_metrics, plain_weights), _ = runs
    assert weights.keys() == plain_weights.keys()
    for name in weights:
        assert torch.equal(weights[name], plain_weights[name]), name
    for name in ("training_perplexity", "training_accuracy", "validation_perplexity"):
        assert metrics[name] == plain_metrics[name]


def test_points_every_n_updates_and_at_each_epoch_end(runs):
    _, _, directory = runs
    points = json.loads((directory / "validation_curve.json").read_text())
    updates = [point["updates"] for point in points]
    assert updates == sorted(set(updates)) and all(u % 2 == 0 for u in updates[:-1])
    assert all(point["perplexity"] > 1 for point in points)
    seconds = [point["training_seconds"] for point in points]
    assert seconds == sorted(seconds) and seconds[0] > 0
    wordpieces = [point["wordpieces"] for point in points]
    assert wordpieces == sorted(wordpieces) and wordpieces[0] > 0
    # The last point of each epoch is AllenNLP's own validation of that epoch.
    for epoch in (0, 1):
        epoch_metrics = json.loads((directory / f"metrics_epoch_{epoch}.json").read_text())
        last = [point for point in points if point["epoch"] == epoch][-1]
        assert last["perplexity"] == pytest.approx(epoch_metrics["validation_perplexity"], rel=1e-6)


def test_every_updates_must_be_positive(tmp_path):
    from maelmo_plugin.training.validation_curve import ValidationCurveCallback

    with pytest.raises(ValueError, match="every_updates must be at least 1, got 0"):
        ValidationCurveCallback(str(tmp_path), every_updates=0)
