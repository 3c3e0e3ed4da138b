"""
A pre-training config whose `model.encoder` is swapped for another type (docs/encoders.md) says aloud what changes:
the encoder trains at its own learning rate where the config measured one, and each setting of Masked ELMo's
own encoder that it ignores is a one-line warning, as is a missing rate. The configs as shipped say nothing.
"""

import json

import pytest
from allennlp.common import Params

from tests import PROJECT_ROOT

CONFIGS = PROJECT_ROOT / "training_config"
LSTM = {"type": "lstm", "input_size": 128, "hidden_size": 64, "num_layers": 2, "bidirectional": True}
TRANSFORMER = {
    "type": "pytorch_transformer",
    "input_dim": 768,
    "num_layers": 2,
    "positional_encoding": "sinusoidal",
}


def read(tmp_path, capfd, base: str, extra: str = "") -> tuple[dict, list[str]]:
    """The variant `(import base) + {extra}` as `allennlp train` reads it, and the warnings Jsonnet printed."""
    variant = tmp_path / "variant.jsonnet"
    variant.write_text(f'(import "{CONFIGS / base}") + {{ {extra} }}\n')
    capfd.readouterr()
    config = Params.from_file(str(variant)).as_dict(quiet=True)
    traces = [
        line.split(" ", 2)[2] for line in capfd.readouterr().err.splitlines() if line.startswith("TRACE: ")
    ]
    return config, traces


@pytest.fixture
def user_data(monkeypatch):
    for name in ("MAELMO_TRAIN_PATH", "MAELMO_VALIDATION_PATH", "MAELMO_VOCAB"):
        monkeypatch.setenv(name, "unused")


@pytest.mark.parametrize(
    "base", ["lm/pretrain_small.jsonnet", "pretrain.jsonnet", "lm/pretrain_bert_small.jsonnet"]
)
def test_the_configs_as_shipped_say_nothing(tmp_path, capfd, user_data, base):
    config, traces = read(tmp_path, capfd, base)
    assert traces == [] and config["model"]["type"] == "maelmo_masked_elmo_lm"


def test_a_swapped_lstm_takes_its_measured_rate_and_is_told_what_it_ignores(tmp_path, capfd):
    config, traces = read(
        tmp_path, capfd, "lm/pretrain_small.jsonnet", f"model+: {{ encoder: {json.dumps(LSTM)} }}"
    )
    small = Params.from_file(str(CONFIGS / "lm" / "pretrain_small.jsonnet")).as_dict(quiet=True)
    measured = json.loads(
        (PROJECT_ROOT / "benchmarks/results/records/encoder_learning_rates.json").read_text()
    )
    assert config["trainer"]["optimizer"]["lr"] == measured["data"]["chosen"]["lstm"]
    assert small["trainer"]["optimizer"]["lr"] == measured["data"]["chosen"]["maelmo_masked_elmo"] == 1e-3
    assert config["model"]["encoder"] == LSTM and config["model"]["type"] == "maelmo_masked_elmo_lm"
    assert traces == [  # settings.cuda_graphs is off in pretrain_small: nothing of it is ignored
        f'model.encoder "lstm" ignores {name}, which sets Masked ELMo\'s own encoder only: give "lstm" its own in '
        "model.encoder"
        for name in ("sizes.cells (512)", "sizes.dropout (0.1)")
    ]


def test_an_encoder_without_a_measured_rate_keeps_masked_elmos_saying_so(tmp_path, capfd, user_data):
    extra = f"model+: {{ encoder: {json.dumps(TRANSFORMER)} }}, settings+:: {{ cuda_graphs: true }}"
    config, traces = read(tmp_path, capfd, "pretrain.jsonnet", extra)
    assert config["trainer"]["optimizer"]["lr"] == 1e-3
    assert [trace.split(" ignores ")[1].split(",")[0] for trace in traces if " ignores " in trace] == [
        "settings.cuda_graphs (true)",
        "sizes.cells (4096)",
        "sizes.dropout (0.1)",
    ]
    assert traces[-1] == (
        'model.encoder "pytorch_transformer" has no learning rate of its own in this config '
        "(encoder_learning_rates::): it trains at Masked ELMo's 0.001; measure one "
        "(benchmarks/encoder_learning_rates.py) or set trainer.optimizer.lr"
    )
    # A rate the config sets is no default: nothing to say about it.
    config, traces = read(
        tmp_path, capfd, "pretrain.jsonnet", extra + ", trainer+: { optimizer+: { lr: 3e-4 } }"
    )
    assert config["trainer"]["optimizer"]["lr"] == 3e-4 and not [t for t in traces if "learning rate" in t]


def test_bert_stars_encoder_reads_its_own_sizes_so_a_swap_there_names_none(tmp_path, capfd):
    config, traces = read(
        tmp_path, capfd, "lm/pretrain_bert_small.jsonnet", f"model+: {{ encoder: {json.dumps(LSTM)} }}"
    )
    assert traces == [] and config["trainer"]["optimizer"]["type"] == "adamw"
