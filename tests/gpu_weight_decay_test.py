"""scripts/gpu_weight_decay.py, the weight-decay diagnostic for a GPU lease: each arm is the arena's run of its
encoder (the same config, sizes, seed and rate) with only the optimizer's decay and the device changed."""

import argparse
import importlib.util

from allennlp.common import Params

from tests import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "gpu_weight_decay.py"
spec = importlib.util.spec_from_file_location("gpu_weight_decay", SCRIPT)
gpu_weight_decay = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_weight_decay)


def expanded(path) -> dict:
    return Params.from_file(str(path)).as_dict(quiet=True)


def test_each_arm_is_the_arenas_run_with_only_its_decay_and_device_changed(tmp_path):
    arguments = argparse.Namespace(
        train="t.txt", validation="v.txt", vocab="vocab.txt", cuda_device=0, smoke=False
    )
    for encoder, rate in (("elmo", 0.004), ("masked_elmo", 0.001)):
        arena = expanded(gpu_weight_decay.pretraining_config(tmp_path / "arena", encoder, 0.0, arguments))
        decayed = expanded(gpu_weight_decay.pretraining_config(tmp_path / "decayed", encoder, 0.1, arguments))
        assert arena["trainer"]["optimizer"] == {"type": "adam", "lr": rate}  # the arena's tuned rate
        assert decayed["trainer"].pop("optimizer") == {
            "type": "adamw",
            "lr": rate,
            "weight_decay": 0.1,
            "parameter_groups": [[["bias", "norm"], {"weight_decay": 0.0}]],  # BERT*'s rule
        }
        del arena["trainer"]["optimizer"]
        assert decayed == arena
        assert arena["trainer"]["cuda_device"] == 0 and arena["trainer"]["use_amp"] is True
        assert arena["train_data_path"] == "t.txt" and arena["random_seed"] == 1


def test_the_sst2_runs_read_the_arenas_representation_sizes(tmp_path, monkeypatch):
    monkeypatch.setenv("MAELMO_VOCAB", "vocab.txt")
    monkeypatch.setenv("MAELMO_GLUE_DIR", "glue")
    monkeypatch.setenv("MAELMO_LM_ARCHIVE", "model.tar.gz")
    (tmp_path / "configs").mkdir()
    arguments = argparse.Namespace(cuda_device=0, smoke=False)
    for encoder, size in (("elmo", 256), ("masked_elmo", 128)):
        config = expanded(
            gpu_weight_decay.glue_config(tmp_path, encoder, encoder, "archive-fz", 2, arguments)
        )
        assert config["model"]["encoder"]["input_size"] == size
        assert config["trainer"]["num_epochs"] == 6 and config["random_seed"] == 2


def test_a_second_run_keeps_a_finished_run_resumes_a_stopped_one_and_restarts_one_without_checkpoints(
    tmp_path, monkeypatch
):
    called = []
    monkeypatch.setattr(gpu_weight_decay, "allennlp", lambda arguments, *rest: called.append(arguments) or 0)
    finished, stopped, early = (tmp_path / name for name in ("finished", "stopped", "early"))
    for directory, files in (
        (finished, ("metrics.json", "model.tar.gz")),
        (stopped, ("model_state_e0.th",)),
        (early, ("out.log",)),
    ):
        directory.mkdir()
        for name in files:
            (directory / name).write_text("")
    for directory in (finished, stopped, early):
        assert gpu_weight_decay.train(tmp_path / "c.jsonnet", directory, tmp_path / "log", 0) == 0
    assert [arguments[3] for arguments in called] == [str(stopped), str(early)]
    assert called[0][-1] == "-r" and "-r" not in called[1]
    assert (
        stopped / "model_state_e0.th"
    ).exists() and not early.exists()  # removed, for allennlp to start it
