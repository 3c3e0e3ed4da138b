"""Every config under training_config/ builds (reader, vocabulary, model, trainer), as allennlp train would."""
import glob

import pytest
from allennlp.commands.train import TrainModel
from allennlp.common import Params
from allennlp.models import Model

from maelmo_plugin.models import ElmoLanguageModel, MaskedElmoLanguageModel
from tests import FIXTURES_ROOT, PROJECT_ROOT

# The metrics each pre-training model reports (validation_metric "-perplexity" needs "perplexity").
METRICS = {
    MaskedElmoLanguageModel: {"perplexity", "accuracy"},
    ElmoLanguageModel: {"forward_perplexity", "backward_perplexity", "perplexity"},
}

CONFIGS = sorted(glob.glob(str(PROJECT_ROOT / "training_config" / "**" / "*.jsonnet"), recursive=True))


def test_there_are_configs_to_check():
    assert any(path.endswith("training_config/pretrain.jsonnet") for path in CONFIGS)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda path: path.split("training_config/")[1])
def test_config_builds(config, tmp_path, monkeypatch):
    corpus = str(FIXTURES_ROOT / "lm" / "corpus.txt")
    monkeypatch.setenv("MAELMO_TRAIN_PATH", corpus)
    monkeypatch.setenv("MAELMO_VALIDATION_PATH", corpus)
    monkeypatch.setenv("MAELMO_VOCAB", str(FIXTURES_ROOT / "lm" / "vocab.txt"))
    monkeypatch.setenv("MAELMO_CUDA_DEVICE", "-1")
    params = Params.from_file(config, params_overrides={"trainer.num_epochs": 1})
    assert params["trainer"]["use_amp"] is False  # never on CPU
    trainer = TrainModel.from_params(params=params, serialization_dir=str(tmp_path), local_rank=0)
    assert isinstance(trainer.model, Model)
    assert trainer.model.get_metrics().keys() == METRICS[type(trainer.model)]


def test_paper_config_has_the_papers_sizes(monkeypatch):
    monkeypatch.setenv("MAELMO_CUDA_DEVICE", "0")
    params = Params.from_file(str(PROJECT_ROOT / "training_config" / "pretrain.jsonnet")).as_dict()
    encoder = params["model"]["encoder"]
    assert (encoder["input_dim"], encoder["cells"], encoder["num_layers"]) == (768, 4096, 2)
    assert params["dataset_reader"]["sequence_length"] == 128
    assert params["model"]["num_mask_sets"] == 4
    assert params["trainer"]["optimizer"] == {"type": "adam", "lr": 0.001}
    assert params["trainer"]["learning_rate_scheduler"] == {"type": "exponential", "gamma": 0.95}
    assert params["trainer"]["num_epochs"] == 10
    assert params["trainer"]["cuda_device"] == 0 and params["trainer"]["use_amp"] is True


def test_elmo_config_has_elmos_sizes(monkeypatch):
    """ELMo's biLM and bilm-tf's training setup (bin/train_elmo.py), as the header of the config says."""
    monkeypatch.setenv("MAELMO_CUDA_DEVICE", "0")
    params = Params.from_file(str(PROJECT_ROOT / "training_config" / "pretrain_elmo.jsonnet")).as_dict()
    assert params["model"]["type"] == "maelmo_elmo_lm"
    encoder = params["model"]["encoder"]
    assert (encoder["input_dim"], encoder["cells"], encoder["num_layers"]) == (512, 4096, 2)
    assert encoder["cell"] == "elmo" and encoder["dropout"] == params["model"]["dropout"] == 0.1
    assert params["dataset_reader"]["sequence_length"] == 20
    assert params["data_loader"] == {"type": "maelmo_btbptt", "batch_size": 128, "bidirectional": False}
    # bilm-tf's Adagrad (0.2, accumulator 1.0, clipping at 10) on a loss summed over the 20 unrolled
    # steps equals these settings on our per-position mean loss.
    optimizer = {"type": "adagrad", "lr": 0.2, "initial_accumulator_value": 1 / 400}
    assert params["trainer"]["optimizer"] == optimizer
    assert "learning_rate_scheduler" not in params["trainer"]
    assert params["trainer"]["grad_norm"] == pytest.approx(10.0 / 20)
    assert params["trainer"]["num_epochs"] == 10
