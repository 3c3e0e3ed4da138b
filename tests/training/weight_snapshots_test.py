import json

import pytest
import torch
from allennlp.commands.train import train_model_from_file
from allennlp.models.archival import load_archive

import maelmo_plugin  # noqa: F401
from maelmo_plugin.training.weight_snapshots import (
    WeightSnapshotsCallback,
    archive_with_weights,
    snapshot_path,
)
from tests import FIXTURES_ROOT

CONFIG = str(FIXTURES_ROOT / "lm" / "experiment.jsonnet")
EVERY_UPDATE = list(range(1, 200))


def train(directory, callbacks):
    overrides = {"trainer.num_epochs": 1, "trainer.callbacks": callbacks, "model.encoder.dropout": 0.2}
    train_model_from_file(CONFIG, str(directory), overrides=json.dumps(overrides))
    return torch.load(directory / "best.th", weights_only=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("snapshots")
    with_snapshots = train(root / "with", [{"type": "maelmo_weight_snapshots", "at_updates": EVERY_UPDATE}])
    return with_snapshots, train(root / "without", []), root / "with"


def test_snapshots_do_not_change_the_run(runs):
    weights, plain, _ = runs
    assert weights.keys() == plain.keys()
    for name in weights:
        assert torch.equal(weights[name], plain[name]), name


def test_a_snapshot_after_each_listed_update_the_last_one_the_final_weights(runs):
    weights, _, directory = runs
    saved = sorted(
        int(path.stem.removeprefix("weights_update")) for path in (directory / "snapshots").glob("*.th")
    )
    assert saved == list(range(1, len(saved) + 1)) and len(saved) > 1  # one per update of the epoch
    assert not list((directory / "snapshots").glob("*.partial"))
    first = torch.load(snapshot_path(directory, 1), weights_only=True)
    last = torch.load(snapshot_path(directory, saved[-1]), weights_only=True)
    assert all(torch.equal(last[name], weights[name]) for name in weights)
    assert not all(torch.equal(first[name], weights[name]) for name in weights)


def test_an_archive_with_a_snapshots_weights_loads_them(runs, tmp_path):
    _, _, directory = runs
    first = torch.load(snapshot_path(directory, 1), weights_only=True)
    archive = archive_with_weights(
        directory / "model.tar.gz", snapshot_path(directory, 1), tmp_path / "update1.tar.gz"
    )
    loaded = load_archive(str(archive)).model.state_dict()
    assert loaded.keys() == first.keys()
    assert all(torch.equal(loaded[name], first[name]) for name in first)
    assert not (tmp_path / "update1.tar.gz.partial").exists()


@pytest.mark.parametrize("updates", [[], [0, 5]])
def test_at_updates_must_be_positive(tmp_path, updates):
    with pytest.raises(ValueError, match="at_updates must be a non-empty list of updates >= 1"):
        WeightSnapshotsCallback(str(tmp_path), at_updates=updates)
