"""reproduction/probe.py and runner.py: the probe's sensitivity, GLUE at snapshots of one pre-training run."""

from reproduction import arena, probe, runner
from tests.reproduction import run_config, wikitext_here
from tests.reproduction.arena_test import sweep
from tests.reproduction.runner_test import glue_campaign_here


def test_the_probe_encoder_is_the_arena_masked_elmo_seed1_run_keeping_snapshots(tmp_path, monkeypatch):
    monkeypatch.setattr(arena, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(runner, "RUNS", tmp_path / "runs")
    sweep(
        tmp_path / "results",
        {"masked_elmo-lr5e-4": 110.0, "masked_elmo-lr1e-3": 94.0, "masked_elmo-lr2e-3": 96.0},
    )
    wikitext_here(tmp_path, monkeypatch)
    (run,) = probe.probe_encoder_runs()
    arena_run = next(r for r in arena.arena_encoder_runs() if r["name"] == "masked_elmo-seed1")
    config = run_config("probe_encoder", arena.resolved(run))
    same = run_config("arena_encoders", arena.resolved(arena_run))
    snapshots = config["trainer"]["callbacks"].pop()
    assert snapshots == {"type": "maelmo_weight_snapshots", "at_updates": list(probe.PROBE_SNAPSHOTS)}
    assert config == same  # the same run, with its weights kept on the way
    assert arena.resolved(run)["score_snapshots"] == probe.PROBE_SNAPSHOTS
    assert set(probe.PROBE_POINTS.values()) - {None} <= set(probe.PROBE_SNAPSHOTS)


def test_probe_runs_fine_tune_and_freeze_each_point_seed_by_seed(tmp_path, monkeypatch):
    runs = probe.probe_runs()
    names = [run["name"] for run in runs]
    assert (
        len(names) == len(set(names)) == 3 * 3 * (2 * 3 + 1)
    )  # seeds x tasks x (ft, fz points + untrained fz)
    assert [run["seed"] for run in runs] == sorted(run["seed"] for run in runs)
    untrained = [run for run in runs if run["name"].startswith("untrained")]
    assert all(run["mode"] == "random-fz" and run["encoder"] == "random" for run in untrained)
    final = next(run for run in runs if run["name"] == "final-fz-sst2-seed2")
    assert final["mode"] == "archive-fz" and final["snapshot"] is None
    assert final["source"] == ("probe_encoder", "masked_elmo-seed1")


def test_a_probe_run_fine_tunes_the_snapshot_of_its_point(tmp_path, monkeypatch):
    trained, _ = glue_campaign_here(tmp_path, monkeypatch)
    variables = []
    record = runner.allennlp_train
    monkeypatch.setattr(runner, "allennlp_train", lambda *args: (variables.append(args[4:]), record(*args)))
    monkeypatch.setattr(arena, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(runner, "resolved", lambda run: {**run, "resolved": True})
    built = []

    def snapshot_archive(directory, updates):
        built.append((directory.name, updates))
        archive = directory / "snapshots" / f"model_update{updates}.tar.gz"
        archive.parent.mkdir(exist_ok=True)
        archive.write_text(f"the weights after {updates} updates")  # hashed by the GLUE run that reads it
        return archive

    monkeypatch.setattr(runner, "snapshot_archive", snapshot_archive)
    runs = [run for run in probe.probe_runs() if run["task"] == "cola" and run["seed"] == 2]
    runner.run_campaign("probe", runs, core=0)
    assert trained[0] == "probe_encoder/masked_elmo-seed1"  # pre-trained first, once
    assert trained[1:] == [f"probe/{run['name']}" for run in runs]
    assert built == [("masked_elmo-seed1", 100), ("masked_elmo-seed1", 500)] * 2
    archives = [extra[0]["MAELMO_LM_ARCHIVE"] for extra in variables[1:]]
    assert archives[0].endswith("probe_encoder/masked_elmo-seed1/snapshots/model_update100.tar.gz")
    assert archives[2].endswith("probe_encoder/masked_elmo-seed1/model.tar.gz")  # final: the run's own
    config = (tmp_path / "runs" / "probe" / "configs" / "update500-fz-cola-seed2.jsonnet").read_text()
    assert 'encoder: "archive-fz"' in config and "input_size: 128" in config
