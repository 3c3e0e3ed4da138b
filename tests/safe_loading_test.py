"""
Archives and checkpoints are loaded without running code from them: every torch.load on the way (AllenNLP's
Model.load and Checkpointer, hence `allennlp evaluate`/`predict`/`train -r` and the maelmo_masked_elmo_embedder) runs
with torch's default `weights_only=True`, which refuses a pickle that would call anything but the tensor
rebuilders. See docs/bad_inputs.md, "Safe loading".
"""

import os
import pickle
import tarfile
from pathlib import Path

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.models import Model
from allennlp.models.archival import load_archive
from allennlp.modules.token_embedders import TokenEmbedder
from allennlp.training.checkpointer import Checkpointer

from maelmo_plugin.common.integrity import ARCHIVE_MANIFEST


class CreatesMarker:
    """Unpickling this creates `path`: what a weights file from an attacker could do instead."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


def save_code_running_pickle(path: Path, marker: Path) -> None:
    torch.save({"weight": torch.zeros(1), "payload": CreatesMarker(marker)}, path)


@pytest.fixture
def marker(tmp_path) -> Path:
    path = tmp_path / "code_ran.txt"
    # The payload really runs when the file is loaded without weights_only: the test below is not vacuous.
    probe = tmp_path / "probe.th"
    save_code_running_pickle(probe, path)
    torch.load(probe, weights_only=False)
    assert path.exists()
    path.unlink()
    return path


@pytest.fixture
def poisoned_serialization_dir(masked_elmo_archive, tmp_path, marker) -> Path:
    """
    The fixture archive, extracted, with weights.th replaced by the code-running pickle, and its list of sha256
    removed, as an attacker would (with it, the archive is refused before torch reads a byte:
    `common/integrity_test.py`): what stops the pickle here is torch's `weights_only` loader.
    """
    directory = tmp_path / "archive"
    with tarfile.open(masked_elmo_archive) as archive:
        archive.extractall(directory, filter="data")
    save_code_running_pickle(directory / "weights.th", marker)
    (directory / ARCHIVE_MANIFEST).unlink()
    return directory


def test_torch_load_defaults_to_weights_only(tmp_path, marker):
    # AllenNLP calls torch.load without weights_only, so its safety rests on this default (torch >= 2.6).
    assert "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD" not in os.environ
    path = tmp_path / "weights.th"
    save_code_running_pickle(path, marker)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        torch.load(path)
    assert not marker.exists()


def test_model_load_and_load_archive_refuse_a_code_running_weights_file(
    poisoned_serialization_dir, marker, tmp_path
):
    config = Params.from_file(str(poisoned_serialization_dir / "config.json"))
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        Model.load(config, str(poisoned_serialization_dir), str(poisoned_serialization_dir / "weights.th"))
    archive = tmp_path / "poisoned.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(poisoned_serialization_dir, arcname=".")
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        load_archive(str(archive))
    assert not marker.exists()


@pytest.mark.parametrize("weights", ["code_running", "not_a_pickle"])
def test_a_refused_weights_file_is_named_with_its_archive(
    poisoned_serialization_dir, marker, tmp_path, weights
):
    if weights == "not_a_pickle":
        (poisoned_serialization_dir / "weights.th").write_text("not a checkpoint")
    archive = tmp_path / "poisoned.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(poisoned_serialization_dir, arcname=".")
    with pytest.raises(
        ConfigurationError, match=f"{archive}'s weights.th is not a weights file that torch loads"
    ):
        load_archive(str(archive))
    with pytest.raises(
        ConfigurationError, match=f"{poisoned_serialization_dir / 'weights.th'} is not a weights"
    ):
        load_archive(str(poisoned_serialization_dir))
    assert not marker.exists()


def test_the_embedder_refuses_a_code_running_weights_file(poisoned_serialization_dir, marker):
    params = Params({"type": "maelmo_masked_elmo_embedder", "archive_file": str(poisoned_serialization_dir)})
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        TokenEmbedder.from_params(params)
    assert not marker.exists()


@pytest.mark.parametrize("poisoned", ["model_state_e0_b0.th", "training_state_e0_b0.th"])
def test_resuming_refuses_a_code_running_checkpoint(tmp_path, marker, poisoned):
    directory = tmp_path / "run"
    directory.mkdir()
    for name in ("model_state_e0_b0.th", "training_state_e0_b0.th"):
        torch.save({"weight": torch.zeros(1)}, directory / name)
    save_code_running_pickle(directory / poisoned, marker)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        Checkpointer(str(directory)).load_checkpoint()
    assert not marker.exists()
