"""reproduction/runner.py: each campaign's runs as allennlp variants, run resumably, kept where the report reads."""

import json
from pathlib import Path

import pytest
import torch

from reproduction import campaigns, fine_tuning, lm_runs, runner, tuning
from tests.reproduction import run_config, wikitext_here


def test_every_campaign_run_is_a_valid_variant_with_its_seed_and_curve(tmp_path, monkeypatch):
    wikitext = wikitext_here(tmp_path, monkeypatch)
    monkeypatch.setattr(runner, "RUNS", tmp_path / "runs")
    names = set()
    for claim, runs in campaigns.claims().items():
        for run in runs:
            config = run_config(claim, run)
            seed = int(run["name"].rsplit("seed", 1)[1]) if "seed" in run["name"] else 1
            assert config["random_seed"] == config["pytorch_seed"] == seed
            assert run_curve(config) in (50, 100, 250, 400)
            assert config["validation_data_path"].endswith("wikitext2-valid-1500.txt")
            loader = config["data_loader"]
            if claim == "tuning":  # one budget for every encoder; the rate (and BERT*'s LayerNorm) as named
                encoder, rate = run["name"].split("-lr")
                budget = (config["trainer"]["num_epochs"], loader["sequence_length"] * loader["batch_size"])
                assert budget == (tuning.TUNING_EPOCHS, 2048)
                assert config["train_data_path"].endswith("wikitext2-subset-4000.txt")
                assert config["trainer"]["optimizer"]["lr"] == float(rate)
                if encoder.startswith("bert"):
                    assert config["model"]["encoder"]["layer_norm"] == encoder.removeprefix("bert_")
            if claim in ("sequence_length", "cell", "mask_accumulation"):  # equal word-pieces per update
                assert loader["sequence_length"] * loader["batch_size"] == 640
            if (
                claim == "arena_sequence_length"
            ):  # the paper's words per update, all of WikiText-2, same masks
                paper = lm_runs.PAPER_WORDPIECES_PER_UPDATE
                assert loader["sequence_length"] * loader["batch_size"] == paper
                assert config["train_data_path"] == str((wikitext / "train.txt").resolve())
                assert config["validation_data_loader"]["mask_by_position"] is True
            if claim == "btbptt":  # the paper's Table 6 protocol
                assert (loader["sequence_length"], loader["batch_size"]) == (20, 20)
            names.add(f"{claim}/{run['name']}")
    assert len(names) == sum(
        len(runs) for runs in campaigns.claims().values()
    )  # no two runs share a directory


@pytest.mark.parametrize(
    "claim, scorings",
    [
        ("sequence_length", [{"validation_data_loader.sequence_length": length} for length in (20, 64, 128)]),
        (
            "arena_sequence_length",  # the same masked word-pieces on windows of either length
            [
                {
                    "validation_data_loader.sequence_length": length,
                    "validation_data_loader.mask_by_position": True,
                }
                for length in (20, 128)
            ],
        ),
    ],
)
def test_sequence_length_runs_are_also_scored_on_windows_of_each_length(
    claim, scorings, tmp_path, monkeypatch
):
    wikitext_here(tmp_path, monkeypatch)
    monkeypatch.setattr(runner, "RUNS", tmp_path / "runs")
    monkeypatch.setattr(runner, "RESULTS", tmp_path / "results")
    calls = []

    def allennlp(arguments, *rest, **kwargs):  # the run has finished training; evaluate writes its output
        calls.append(arguments)
        Path(arguments[arguments.index("--output-file") + 1]).write_text(json.dumps({"perplexity": 1.0}))

    monkeypatch.setattr(runner, "allennlp", allennlp)
    run = campaigns.claims()[claim][0]
    directory = tmp_path / "runs" / claim / run["name"]
    directory.mkdir(parents=True)
    for name in ("metrics.json", "model.tar.gz"):
        (directory / name).write_text("{}")
    runner.train(claim, run, core=0)
    assert [json.loads(call[call.index("--overrides") + 1]) for call in calls] == scorings
    assert all(call[:2] == ["evaluate", str(directory / "model.tar.gz")] for call in calls)
    kept = tmp_path / "results" / claim / run["name"]
    assert sorted(path.name for path in kept.glob("windows*")) == sorted(
        f"windows{overrides['validation_data_loader.sequence_length']}_metrics.json" for overrides in scorings
    )
    runner.train(claim, run, core=0)  # run again: nothing left to do
    assert len(calls) == len(scorings)


def run_curve(config):
    """The validation curve's interval; StopIteration (a failure) if the run has no curve."""
    return next(
        c["every_updates"] for c in config["trainer"]["callbacks"] if c["type"] == "maelmo_validation_curve"
    )


def test_two_workers_share_a_campaign_each_run_taken_by_one(tmp_path, monkeypatch):
    import fcntl

    trained = []
    monkeypatch.setattr(runner, "RUNS", tmp_path)
    monkeypatch.setattr(runner, "train", lambda claim, run, core: trained.append(run["name"]))
    runs = [{"name": "a"}, {"name": "b"}]
    (tmp_path / "claim").mkdir()
    with open(tmp_path / "claim" / "a.lock", "w") as other_worker:
        fcntl.flock(other_worker, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another worker is training run a
        runner.run_campaign("claim", runs, core=1)
    assert trained == ["b"]
    runner.run_campaign("claim", runs, core=1)  # that worker has stopped: run a is free again
    assert trained == ["b", "a", "b"]


@pytest.mark.parametrize(
    "files, expected",
    [
        ([], ["train"]),
        (["config.json"], ["train"]),  # stopped before its first checkpoint: started again
        (
            ["model_state_e1_b0.th", "model.tar.gz"],
            ["train", "-r"],
        ),  # interrupted: AllenNLP archives the best so far
        (["model_state_e1_b0.th", "model.tar.gz", "metrics.json"], None),  # finished
    ],
)
def test_a_campaign_run_is_done_only_when_allennlp_wrote_its_final_metrics(
    files, expected, tmp_path, monkeypatch
):
    calls = []
    monkeypatch.setattr(runner, "RUNS", tmp_path)
    monkeypatch.setattr(runner, "allennlp", lambda arguments, *rest, **kwargs: calls.append(arguments))
    directory = tmp_path / "claim" / "run"
    directory.mkdir(parents=True)
    for name in files:
        (directory / name).write_text("")
    runner.allennlp_train(tmp_path / "config.jsonnet", directory, tmp_path / "log", core=0)
    if expected is None:
        assert calls == []
    else:
        assert [calls[0][0], *calls[0][-1:]] == [expected[0], *(expected[1:] or ["--file-friendly-logging"])]


def glue_campaign_here(tmp_path, monkeypatch):
    """runner.py with its folders in tmp_path and allennlp recorded: (trained directories, evaluations)."""
    monkeypatch.setenv("MAELMO_GLUE_DIR", str(tmp_path / "glue_data"))
    monkeypatch.setattr(runner, "RUNS", tmp_path / "runs")
    monkeypatch.setattr(runner, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(runner, "variant", lambda claim, run: tmp_path / f"{claim}-{run['name']}.jsonnet")
    trained, evaluated = [], []

    def allennlp_train(config, directory, *rest):  # a finished run, as allennlp leaves it
        trained.append(f"{directory.parent.name}/{directory.name}")
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "metrics.json").write_text(json.dumps({"validation_perplexity": 40.0}))
        (directory / "model.tar.gz").write_text(f"the archive of {directory.parent.name}/{directory.name}")

    monkeypatch.setattr(runner, "allennlp_train", allennlp_train)
    monkeypatch.setattr(runner, "allennlp", lambda arguments, *rest: evaluated.append(arguments[1]))
    return trained, evaluated


def run_glue_campaign(claim: str, *names: str, core: int = 0, **fields) -> None:
    """
    `runner.run_campaign` on the runs of the GLUE campaign `claim` (`fine_tuning.glue_runs`) named `names`, or
    else on those whose `fields` are as given (task="rte", seed=1), in the campaign's order.
    """
    runs = [
        run
        for run in fine_tuning.glue_runs(claim)
        if (run["name"] in names if names else all(run[field] == value for field, value in fields.items()))
    ]
    assert runs, f"no run of {claim} is chosen"
    runner.run_campaign(claim, runs, core=core)


def test_a_glue_run_first_pretrains_its_missing_encoder_keeping_the_committed_compute_results(
    tmp_path, monkeypatch
):
    trained, evaluated = glue_campaign_here(tmp_path, monkeypatch)
    committed = tmp_path / "results" / "compute" / "masked_elmo"
    committed.mkdir(parents=True)
    (committed / "metrics.json").write_text(json.dumps({"validation_perplexity": 38.6}))
    elmo = tmp_path / "runs" / "compute" / "elmo"
    elmo.mkdir(parents=True)
    # interrupted: AllenNLP archived its best so far, but it has not finished
    (elmo / "model.tar.gz").write_text("")
    run_glue_campaign("glue", task="rte", seed=1)
    assert trained == [
        "compute/masked_elmo",
        "glue/masked_elmo-rte-seed1",
        "compute/elmo",
        "glue/elmo-rte-seed1",
        "compute/bert",
        "glue/bert-rte-seed1",
        "glue/random-rte-seed1",  # random: masked_elmo's architecture
    ]
    assert evaluated[0] == str(tmp_path / "runs" / "glue" / "masked_elmo-rte-seed1" / "model.tar.gz")
    assert json.loads((committed / "metrics.json").read_text()) == {"validation_perplexity": 38.6}
    assert (tmp_path / "results" / "compute" / "elmo" / "metrics.json").exists()  # none committed: kept


def test_an_arena_glue_run_reads_the_probes_pretraining_where_the_arenas_same_run_is_missing(
    tmp_path, monkeypatch
):
    """The probe's pre-training is the arena's masked_elmo-seed1 again: a GLUE run that needs the arena's archive
    reads the probe's where only that one is here, instead of pre-training the same encoder again."""
    trained, evaluated = glue_campaign_here(tmp_path, monkeypatch)
    probe = tmp_path / "runs" / "probe_encoder" / "masked_elmo-seed1"
    probe.mkdir(parents=True)
    for name in ("metrics.json", "model.tar.gz"):
        (probe / name).write_text("{}")
    run_glue_campaign("arena_glue", "masked_elmo-fz-wnli-seed1", "masked_elmo-fz-rte-seed2")
    assert trained == [
        "arena_glue/masked_elmo-fz-wnli-seed1",
        "arena_encoders/masked_elmo-seed2",  # no twin: pre-trained here
        "arena_glue/masked_elmo-fz-rte-seed2",
    ]


def test_a_glue_run_keeps_the_path_and_sha256_of_the_archive_it_read(tmp_path, monkeypatch):
    """One path can hold two models in turn (BERT*'s post-LN, then pre-LN, encoder): each GLUE result records the
    bytes it read, hashed before training, beside its scores."""
    import hashlib

    glue_campaign_here(tmp_path, monkeypatch)
    monkeypatch.setattr(runner, "resolved", lambda run: {**run, "resolved": True})
    archive = tmp_path / "runs" / "arena_encoders" / "bert-seed2" / "model.tar.gz"
    archive.parent.mkdir(parents=True)
    (archive.parent / "metrics.json").write_text("{}")  # pre-trained already: read as it is
    archive.write_bytes(b"a pre-LN BERT* encoder")
    run_glue_campaign("arena_glue", "bert-rte-seed2")
    kept = json.loads(
        (tmp_path / "results" / "arena_glue" / "bert-rte-seed2" / "encoder_archive.json").read_text()
    )
    assert kept == {"archive": str(archive), "sha256": hashlib.sha256(b"a pre-LN BERT* encoder").hexdigest()}
    # the same path, another model: another run reading it records another hash
    archive.write_bytes(b"a post-LN BERT* encoder")
    run_glue_campaign("arena_glue", "bert-cola-seed2")
    other = json.loads(
        (tmp_path / "results" / "arena_glue" / "bert-cola-seed2" / "encoder_archive.json").read_text()
    )
    assert other["archive"] == kept["archive"] and other["sha256"] != kept["sha256"]


def test_a_glue_run_whose_encoder_another_worker_pretrains_waits_and_the_campaign_goes_on(
    tmp_path, monkeypatch
):
    import fcntl

    trained, _ = glue_campaign_here(tmp_path, monkeypatch)
    (tmp_path / "runs" / "compute").mkdir(parents=True)
    with open(tmp_path / "runs" / "compute" / "elmo.lock", "w") as other_worker:
        fcntl.flock(other_worker, fcntl.LOCK_EX | fcntl.LOCK_NB)
        run_glue_campaign("glue", task="rte", seed=1, core=1)
    assert "glue/elmo-rte-seed1" not in trained and "glue/bert-rte-seed1" in trained


def test_a_run_whose_results_are_committed_is_done_so_a_fresh_clone_goes_on_where_they_stop(
    tmp_path, monkeypatch
):
    trained, _ = glue_campaign_here(tmp_path, monkeypatch)
    for claim, name, metrics in (
        ("glue", "bert-rte-seed1", "dev_metrics.json"),
        ("btbptt", "a", "metrics.json"),
    ):
        (tmp_path / "results" / claim / name).mkdir(parents=True)
        (tmp_path / "results" / claim / name / metrics).write_text("{}")
    run_glue_campaign("glue", "bert-rte-seed1")
    runner.run_campaign("btbptt", [{"name": "a"}, {"name": "b", "data": "full"}], core=0)
    assert trained == ["btbptt/b"]


def test_runs_can_be_chosen_by_name_patterns_in_the_campaigns_order():
    runs = fine_tuning.glue_runs("glue")
    chosen = [run["name"] for run in runner.matching(runs, ["elmo-rte-*", "random-cola-seed[23]"])]
    assert chosen == [
        "elmo-rte-seed1",
        "elmo-rte-seed2",
        "random-cola-seed2",
        "elmo-rte-seed3",
        "random-cola-seed3",
    ]
    assert runner.matching(runs, None) == runs
    with pytest.raises(SystemExit, match="no run matches elmo-mnli-"):
        runner.matching(runs, ["elmo-mnli-*"])


def test_a_campaign_without_runs_exits_with_a_message_without_patterns_too():
    with pytest.raises(SystemExit, match="the campaign has no runs"):
        runner.matching([], None)


def test_the_glue_campaign_runs_every_encoder_on_every_task_with_one_seed_before_the_next_seed():
    runs = fine_tuning.glue_runs("glue")
    first_seed = [run for run in runs if run["seed"] == lm_runs.SEEDS[0]]
    assert (
        runs[: len(first_seed)] == first_seed
    )  # stopped part-way, the campaign leaves whole rows to compare
    encoders = [encoder for encoder in fine_tuning.GLUE_ENCODERS if encoder != "elmo_stateful"]  # arena only
    assert {(run["encoder"], run["task"]) for run in first_seed} == {
        (encoder, task) for encoder in encoders for task in fine_tuning.GLUE_TASKS
    }
    assert len(runs) == len(first_seed) + (len(lm_runs.SEEDS) - 1) * len(encoders) * 3  # WNLI once
    # The arena also fine-tunes its first, stateful biLM, on the pre-training seeds it has.
    record = [run["name"] for run in fine_tuning.glue_runs("arena_glue") if run["encoder"] == "elmo_stateful"]
    assert record == [f"elmo_stateful-{task}-seed1" for task in fine_tuning.GLUE_TASKS] + [
        f"elmo_stateful-{task}-seed2" for task in ("rte", "cola", "sst2")
    ]


def test_a_kept_run_says_which_cpu_it_ran_on(tmp_path, monkeypatch):
    """CPU-minutes compare only on the same kind of CPU: each kept run records its machine."""
    monkeypatch.setattr(runner, "RESULTS", tmp_path / "results")
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.json").write_text("{}")
    runner.keep("arena_encoders", "bert-seed1", run)
    machine = json.loads(
        (tmp_path / "results" / "arena_encoders" / "bert-seed1" / "machine.json").read_text()
    )
    assert machine == runner.machine() and machine["cpu"] and machine["torch"] == torch.__version__
    assert set(machine["flags"]) <= {"avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16"}


def test_the_arenas_bert_star_at_seed_1_is_its_budgets_chosen_run_copied_not_trained_again(
    tmp_path, monkeypatch
):
    """Once the budget (e) has chosen, its chosen run is the arena's bert-seed1 (the same seeded config): the arena's
    campaign keeps that run's results under its own name, and a GLUE run reads its archive."""
    from reproduction import arena

    trained, evaluated = glue_campaign_here(tmp_path, monkeypatch)
    monkeypatch.setattr(arena, "budget_recipe", lambda: ("pre", "2e-3", 1000, "linear"))
    chosen = tmp_path / "results" / "bert_budget" / "pre-lr2e-3-warmup1000-linear"
    chosen.mkdir(parents=True)
    for name in ("metrics.json", "validation_curve.json", "machine.json"):
        (chosen / name).write_text(json.dumps({"file": name}))
    archive = tmp_path / "runs" / "bert_budget" / "pre-lr2e-3-warmup1000-linear"
    archive.mkdir(parents=True)
    for name in ("metrics.json", "model.tar.gz"):
        (archive / name).write_text("{}")
    runs = {run["name"]: run for run in arena.arena_encoder_runs()}
    runner.run_campaign("arena_encoders", [runs["bert-seed1"]], core=0)
    assert trained == []
    kept = tmp_path / "results" / "arena_encoders" / "bert-seed1"
    assert sorted(path.name for path in kept.iterdir()) == [
        "machine.json",
        "metrics.json",
        "validation_curve.json",
    ]
    assert json.loads((kept / "machine.json").read_text()) == {
        "file": "machine.json"
    }  # where it ran, not here
    monkeypatch.setattr(runner, "resolved", lambda run: {**run, "resolved": True})
    run_glue_campaign("arena_glue", "bert-rte-seed1", "bert-rte-seed2")
    assert trained == ["arena_glue/bert-rte-seed1", "arena_encoders/bert-seed2", "arena_glue/bert-rte-seed2"]
    assert evaluated[0] == str(tmp_path / "runs" / "arena_glue" / "bert-rte-seed1" / "model.tar.gz")


def test_an_untrained_bert_star_waits_for_the_budgets_choice_even_where_an_older_architecture_archive_is_here(
    tmp_path, monkeypatch
):
    """Before the budget (e) has chosen, BERT*'s architecture may be another model than the one it will choose (the
    LayerNorm may move): a GLUE run of it waits rather than reading the archive built before."""
    from reproduction import arena

    trained, _ = glue_campaign_here(tmp_path, monkeypatch)
    monkeypatch.setattr(arena, "budget_recipe", lambda: None)
    built_before = tmp_path / "runs" / "architectures" / "bert"
    built_before.mkdir(parents=True)
    for name in ("metrics.json", "model.tar.gz"):
        (built_before / name).write_text("{}")
    run_glue_campaign("arena_glue", "random_bert-fz-rte-seed2")
    assert trained == []
    monkeypatch.setattr(arena, "budget_recipe", lambda: ("pre", "2e-3", 1000, "linear"))
    run_glue_campaign("arena_glue", "random_bert-fz-rte-seed2")
    assert trained == ["arena_glue/random_bert-fz-rte-seed2"]
