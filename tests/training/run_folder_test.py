"""
`maelmo_plugin/training/run_folder.py`: what `-f` may replace, in `allennlp train` and under torchrun. Before
(issue 70's class of fault, in the plugin's own torchrun code and in AllenNLP's `-f`), `-s FOLDER -f` removed
any folder, a user's thesis included.
"""

import os

import pytest
from allennlp.commands.train import train_model_from_file
from allennlp.common import Params
from allennlp.training import util as training_util

from maelmo_declarations.owned_outputs import MANIFEST
from maelmo_declarations.refusals import Refusal
from maelmo_plugin.training.torchrun import _prepare_on_primary
from tests import FIXTURES_ROOT, file_tree

CONFIG = str(FIXTURES_ROOT / "lm" / "experiment.jsonnet")


@pytest.fixture
def places(tmp_path, monkeypatch):
    """A user's folder, a folder holding the run's data, a link, a home and a working directory of their own."""
    (tmp_path / "thesis" / "sub").mkdir(parents=True)
    (tmp_path / "thesis" / "thesis.txt").write_text("chapter one")
    (tmp_path / "thesis" / "sub" / "x.txt").write_text("notes")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "corpus.txt").write_bytes((FIXTURES_ROOT / "lm" / "corpus.txt").read_bytes())
    (tmp_path / "link").symlink_to(tmp_path / "thesis")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".bashrc").write_text("settings")
    (tmp_path / "work").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path


@pytest.mark.parametrize(
    "target, message",
    [
        ("thesis", "allennlp train did not write"),
        ("link", "symbolic link"),
        ("home", "root or home folder"),
        ("work", "holds the working directory"),
        ("data", "holds the input"),
    ],
)
@pytest.mark.parametrize("entry", ["allennlp train", "torchrun"])
def test_force_never_removes_a_folder_a_run_did_not_claim(places, target, message, entry):
    before = file_tree(places)
    overrides = {"train_data_path": str(places / "data" / "corpus.txt")}
    with pytest.raises(Refusal, match=message) as refusal:
        if entry == "allennlp train":
            train_model_from_file(CONFIG, str(places / target), overrides=overrides, force=True)
        else:
            params = Params.from_file(CONFIG, params_overrides=overrides)
            _prepare_on_primary(params, str(places / target), force=True, world_size=1)
    if target == "thesis":
        assert "-f replaces only allennlp train's own output. Give a new path" in str(refusal.value)
    assert file_tree(places) == before


def test_force_replaces_a_runs_own_folder(tmp_path):
    run = tmp_path / "run"
    training_util.create_serialization_dir(Params({}), str(run), recover=False, force=False)
    assert os.listdir(run) == [MANIFEST]  # claimed, empty, by the run that made it
    (run / "out.log").write_text("the first run's log")
    (run / "model_state_e0_b0.th").write_bytes(b"weights")
    training_util.create_serialization_dir(Params({}), str(run), recover=False, force=True)
    assert os.listdir(run) == [MANIFEST]


@pytest.mark.parametrize("entry", ["allennlp train", "torchrun"])
def test_a_serialization_directory_that_is_a_file_is_one_line(tmp_path, entry):
    """`-s` naming a file was a NotADirectoryError traceback (and gloo's noise under torchrun: issue 70)."""
    path = tmp_path / "notes.txt"
    path.write_text("the user's notes")
    with pytest.raises(Refusal, match="is a file: give the folder the run writes into"):
        if entry == "allennlp train":
            train_model_from_file(CONFIG, str(path))
        else:
            _prepare_on_primary(Params.from_file(CONFIG), str(path), force=False, world_size=1)
    assert path.read_text() == "the user's notes"
