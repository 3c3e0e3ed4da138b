"""maelmo_plugin/arena/runner.py: the arena's steps, each on what the steps before it kept."""

import fcntl
import json
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from allennlp.common import Params

from maelmo_declarations.refusals import Refusal
from maelmo_plugin.arena import runner
from maelmo_plugin.arena.plan import Tuning, plan_of, read_plan
from maelmo_plugin.arena.runs import Pretraining, sweep
from maelmo_plugin.arena.table import write_table
from maelmo_plugin.arena.worker import Worker, taken
from tests import PROJECT_ROOT

FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "arena"


@pytest.fixture
def plan(monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    return read_plan(str(FIXTURES / "tiny.jsonnet"))


def finish(folder: Path, perplexity: float) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.json").write_text(json.dumps({"validation_perplexity": perplexity}))
    (folder / "model.tar.gz").write_bytes(b"")


@dataclass(frozen=True)
class FakeWorker(Worker):
    """Trains a run by writing its results: the perplexity `finals` gives its name (100 otherwise)."""

    finals: dict = field(default_factory=dict)
    trained: list = field(default_factory=list)

    def train(self, config, folder, log, variables=None, lock=None):
        assert config.is_file()
        self.trained.append(folder.name)
        finish(folder, self.finals.get(folder.name, 100.0))


def test_an_arena_folder_keeps_its_plan_and_refuses_another(plan, tmp_path):
    runner.record_plan(plan, tmp_path, "tiny.jsonnet")
    runner.record_plan(plan, tmp_path, "tiny.jsonnet")  # the same plan: the arena goes on
    other = read_plan(str(FIXTURES / "tiny_glue.jsonnet"))
    with pytest.raises(Refusal, match=r"another plan than tiny_glue.jsonnet's \(its glue differ\)"):
        runner.record_plan(other, tmp_path, "tiny_glue.jsonnet")
    longer = replace(plan, epochs=2)
    with pytest.raises(Refusal, match=r"\(its epochs differ\)"):
        runner.record_plan(longer, tmp_path, "tiny.jsonnet")
    lstm = plan.arm("lstm")
    other_encoder = replace(plan, arms=(replace(lstm, encoder={"type": "gru"}), plan.arm("masked_elmo")))
    with pytest.raises(Refusal, match=r"\(its arms.lstm differ\)"):
        runner.record_plan(other_encoder, tmp_path, "tiny.jsonnet")


def test_a_wider_sweep_and_more_seeds_continue_in_the_same_folder(plan, tmp_path):
    runner.record_plan(plan, tmp_path, "tiny.jsonnet")
    lstm = plan.arm("lstm")
    wider = replace(
        plan, arms=(replace(lstm, rates=(1e-3, *lstm.rates)), plan.arm("masked_elmo")), seeds=(1, 2, 3)
    )
    runner.record_plan(wider, tmp_path, "tiny.jsonnet")
    assert json.loads((tmp_path / "plan.json").read_text())["seeds"] == [1, 2, 3]


def test_the_parameter_report_counts_each_arm_and_refuses_a_mismatch_beyond_the_tolerance(plan, tmp_path):
    said = []
    report = runner.parameter_report(plan, tmp_path, False, said.append)
    assert report["arms"]["lstm"] == {
        "total": 8239,
        "encoder": 4992,
        "model": "MaskedElmoLanguageModel",
        "embedding_dim": 16,
    }
    assert report["arms"]["masked_elmo"]["encoder"] == 4544 and not report["mismatch"]
    assert "lstm: 8,239 parameters, 4,992 in the encoder" in said[0]
    assert json.loads((tmp_path / "parameters.json").read_text()) == report
    tight = type(plan)(**{**plan.__dict__, "parameter_tolerance": 0.05})  # the encoders part by 9.9%
    with pytest.raises(Refusal, match=r"total by 5\.8%, encoder by 9\.9%\. .*--allow-parameter-mismatch"):
        runner.parameter_report(tight, tmp_path, False, said.append)
    assert runner.parameter_report(tight, tmp_path, True, said.append)["mismatch"]


def test_each_arms_rate_is_chosen_by_the_rule_and_written_beside_its_sweep(plan, tmp_path):
    finish(Pretraining("lstm", 0.003, 1).folder(tmp_path), 120.0)
    finish(
        Pretraining("lstm", 0.01, 1).folder(tmp_path), 119.5
    )  # within 1% of the lowest: the lower rate wins
    finish(Pretraining("masked_elmo", 0.01, 1).folder(tmp_path), 90.0)
    said = []
    assert runner.choose_rates(plan, tmp_path, said.append) == {"lstm": 0.003, "masked_elmo": 0.01}
    record = json.loads((tmp_path / "tuning.json").read_text())
    assert record["arms"]["lstm"]["sweep"] == [
        {"rate": 0.003, "perplexity": 120.0},
        {"rate": 0.01, "perplexity": 119.5},
    ]
    assert record["arms"]["lstm"]["at_the_grid_edge"] == "lowest" and "widen arms.lstm.rates" in said[1]
    floor = record["unigram_floor"]
    assert floor == pytest.approx(75.6, abs=0.1)  # the fixture corpus's, against itself
    assert record["arms"]["lstm"]["learned"] is False  # 120 is not below 0.8 x 75.6
    assert any("lstm has not learned" in line and "75.6" in line for line in said)


def test_rates_are_not_chosen_before_the_sweep_has_finished(plan, tmp_path):
    finish(Pretraining("lstm", 0.003, 1).folder(tmp_path), 120.0)
    with pytest.raises(RuntimeError, match="the sweep of lstm has not finished"):
        runner.choose_rates(plan, tmp_path, print)


def test_runs_already_finished_are_not_trained_again(plan, tmp_path):
    finish(Pretraining("lstm", 0.003, 1).folder(tmp_path), 120.0)
    worker = FakeWorker(None, -1)
    runner.train_all(plan, tmp_path, sweep(plan), worker, print)
    assert worker.trained == ["lstm-lr0.01-seed1", "masked_elmo-lr0.01-seed1"]


def test_a_tuning_budget_sweeps_on_its_own_text_and_every_seed_trains_afresh_at_the_chosen_rate(
    plan, tmp_path
):
    subset = PROJECT_ROOT / "tests" / "fixtures" / "lm" / "repetitive.txt"
    tuned = replace(plan, tuning=Tuning(str(subset), plan.corpus["validation"], 3))
    worker = FakeWorker(None, -1, finals={"lstm-lr0.01-seed1-tuning": 90.0})
    rates = runner.run_arena(tuned, tmp_path, worker, "arena.jsonnet", say=lambda line: None)
    assert rates == {"lstm": 0.01, "masked_elmo": 0.01}
    assert worker.trained == [
        "lstm-lr0.003-seed1-tuning",
        "lstm-lr0.01-seed1-tuning",
        "masked_elmo-lr0.01-seed1-tuning",
        "lstm-lr0.01-seed1",  # not the sweep's run: that one trained on the tuning budget
        "masked_elmo-lr0.01-seed1",
        "lstm-lr0.01-seed2",
        "masked_elmo-lr0.01-seed2",
    ]
    configs = tmp_path / "configs" / "pretrain"
    swept = Params.from_file(str(configs / "lstm-lr0.01-seed1-tuning.jsonnet"))
    assert swept["train_data_path"] == str(subset) and swept["trainer"]["num_epochs"] == 3
    seeded = Params.from_file(str(configs / "lstm-lr0.01-seed1.jsonnet"))
    assert seeded["train_data_path"] == plan.corpus["train"] and seeded["trainer"]["num_epochs"] == 1
    record = json.loads((tmp_path / "tuning.json").read_text())
    assert record["budget"] == {"train": str(subset), "validation": plan.corpus["validation"], "epochs": 3}
    assert record["unigram_floor"] != pytest.approx(75.6, abs=0.1)  # the subset's floor, not the corpus's
    assert "floor of the tuning budget's validation text" in write_table(tuned, tmp_path, rates)
    # The folder's runs are the tuning budget's: the same folder refuses the plan without it.
    with pytest.raises(Refusal, match="tuning"):
        runner.record_plan(plan, tmp_path, "arena.jsonnet")


HOLD = """
import fcntl, sys, time
held = open(sys.argv[1], "w")
fcntl.flock(held, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""


def test_a_run_another_worker_holds_is_left_to_it_and_taken_over_when_that_worker_is_killed(plan, tmp_path):
    first = sweep(plan)[0]
    lock = runner.lock(tmp_path, first)
    lock.parent.mkdir(parents=True)
    other = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], stdout=subprocess.PIPE, text=True)
    assert other.stdout.readline() == "held\n"
    worker = FakeWorker(None, -1)
    killer = threading.Timer(1.0, other.kill)
    killer.start()
    started = time.monotonic()
    try:
        runner.train_all(plan, tmp_path, sweep(plan), worker, print)
    finally:
        killer.cancel()
        other.kill()
        other.wait()
    # The free runs first, then the held one, once its worker died (its lock went with it).
    assert worker.trained == ["lstm-lr0.01-seed1", "masked_elmo-lr0.01-seed1", first.name]
    assert time.monotonic() - started >= 0.9
    with open(lock, "w") as again:  # and nothing holds it now
        fcntl.flock(again, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_a_run_is_trained_once_however_many_workers_share_the_folder(plan, tmp_path):
    workers = [FakeWorker(None, -1) for _ in range(3)]
    threads = [
        threading.Thread(target=runner.train_all, args=(plan, tmp_path, sweep(plan), worker, print))
        for worker in workers
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    trained = [name for worker in workers for name in worker.trained]
    assert sorted(trained) == sorted(run.name for run in sweep(plan))


def test_a_runs_process_sees_none_of_torchruns_variables(monkeypatch):
    for name, value in {
        "RANK": "1",
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "h",
        "TORCHELASTIC_RUN_ID": "x",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MAELMO_KEPT", "yes")
    environment = Worker(3, -1).environment({"MAELMO_LM_ARCHIVE": "a.tar.gz"})
    assert not {"RANK", "WORLD_SIZE", "MASTER_ADDR", "TORCHELASTIC_RUN_ID"} & set(environment)
    assert environment["MAELMO_KEPT"] == "yes" and environment["MAELMO_LM_ARCHIVE"] == "a.tar.gz"
    assert environment["OMP_NUM_THREADS"] == "1"  # a pinned worker's runs: one thread each


def test_a_runs_process_holds_its_lock_too_so_that_a_killed_worker_leaves_it_locked(tmp_path, monkeypatch):
    """The lock is passed to the training process: while it lives, no other worker takes its run."""
    seen = {}

    def run(command, **options):
        seen.update(options, command=command)
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(subprocess, "run", run)
    with taken(tmp_path / "run.lock") as held:
        Worker(2, -1).train(tmp_path / "run.jsonnet", tmp_path / "run", tmp_path / "run.log", lock=held)
        assert seen["pass_fds"] == (held.fileno(),)
    assert seen["command"][:3] == ["taskset", "-c", "2"] and "--include-package" in seen["command"]


def test_an_arena_folder_inside_what_the_plan_reads_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    """The declared check knows the arena file alone; the plan's corpus and GLUE folder are inputs too."""
    from tests import run_allennlp_in_process

    monkeypatch.chdir(PROJECT_ROOT)
    glue = tmp_path / "glue"
    shutil.copytree(PROJECT_ROOT / "tests" / "fixtures" / "glue" / "RTE", glue / "RTE")
    arena = tmp_path / "arena.jsonnet"
    arena.write_text(f'(import "{FIXTURES / "tiny_glue.jsonnet"}") + {{ glue+: {{ directory: "{glue}" }} }}')
    with pytest.raises(SystemExit) as refused:
        run_allennlp_in_process("maelmo-arena", str(arena), "-s", str(glue / "arena"))
    assert refused.value.code == 2 and "inside" in capsys.readouterr().err
    assert sorted(path.name for path in glue.iterdir()) == ["RTE"]


def test_a_run_that_fails_is_one_line_naming_its_log(plan, tmp_path, monkeypatch, capsys):
    """A run's own failure (here a config its training cannot read) stops the arena in one line that names the
    run's log; the same command continues once it is fixed."""
    from maelmo_plugin.arena.worker import RunFailed
    from tests import run_allennlp_in_process

    config = tmp_path / "broken.jsonnet"
    config.write_text("{ trainer: ")
    with pytest.raises(
        RunFailed, match=r"`allennlp train` failed \(exit \d+: .+\): see .*broken\.log"
    ) as failed:
        Worker(None, -1).train(config, tmp_path / "run", tmp_path / "broken.log")
    # The line says why, as the log's last line does (here jsonnet's error, naming the config).
    said = str(failed.value)
    assert "Traceback" not in said and "broken.jsonnet" in said.split(": see ")[0]

    def failing(*args, **kwargs):
        raise RunFailed("`allennlp train` failed (exit 1): see run.log")

    monkeypatch.setattr("maelmo_plugin.commands.arena.run_arena", failing)
    with pytest.raises(SystemExit) as stopped:
        run_allennlp_in_process("maelmo-arena", str(FIXTURES / "tiny.jsonnet"), "-s", str(tmp_path / "arena"))
    error = capsys.readouterr().err
    assert stopped.value.code == 2 and "Traceback" not in error
    assert "see run.log; fix it and run the same command again to continue" in error


def test_a_glue_task_missing_from_its_folder_is_refused_before_anything_trains(tmp_path, monkeypatch):
    """The GLUE runs come last, after every pre-training: a task whose files are not in the folder must stop the
    arena at its start, naming the file, not hours later."""
    monkeypatch.chdir(PROJECT_ROOT)
    glue = tmp_path / "glue"
    shutil.copytree(PROJECT_ROOT / "tests" / "fixtures" / "glue" / "RTE", glue / "RTE")
    arena_file = tmp_path / "arena.jsonnet"
    arena_file.write_text(
        f'(import "{FIXTURES / "tiny_glue.jsonnet"}") + {{ glue+: {{ directory: "{glue}", tasks: ["rte", "cola"] }} }}'
    )
    worker = FakeWorker(None, -1)
    with pytest.raises(Refusal, match=r"glue\.tasks cola reads .*CoLA/train\.tsv, which does not exist"):
        runner.run_arena(read_plan(str(arena_file)), tmp_path / "arena", worker, str(arena_file))
    assert worker.trained == []


def test_the_built_in_arms_serve_as_they_are_packaged_and_match_in_parameters(tmp_path, monkeypatch):
    """Masked ELMo, BERT* and the ELMo biLM, each by its packaged small config, are arms as a user's config is:
    each pre-trains on the arena's corpus at the sweep's rate, and their encoders match within 5% (the
    reproduction's small configs are parameter-matched)."""
    monkeypatch.chdir(PROJECT_ROOT)
    corpus = str(PROJECT_ROOT / "tests" / "fixtures" / "lm" / "corpus.txt")
    spec = {
        "arms": {
            "masked_elmo": {"config": "lm/pretrain_small", "rates": [1e-3]},
            "bert": {"config": "lm/pretrain_bert_small", "rates": [5e-4]},
            "elmo": {"config": "lm/pretrain_elmo_small", "rates": [8e-3]},
        },
        "corpus": {"train": corpus, "validation": corpus, "vocab": "tests/fixtures/lm/vocab.txt"},
        "epochs": 1,
        "seeds": [1, 2],
    }
    plan = plan_of(spec, str(PROJECT_ROOT), "arena.jsonnet")
    report = runner.parameter_report(plan, tmp_path, True, lambda said: None)
    assert report["spread"]["encoder"] < 0.05 and set(report["arms"]) == {"masked_elmo", "bert", "elmo"}
    for arm in plan.arms:
        config = Params.from_file(str(runner.write_config(tmp_path, sweep(plan, arm.name)[0], plan, -1)))
        assert config["train_data_path"] == corpus and config["trainer"]["num_epochs"] == 1
        assert config["trainer"]["optimizer"]["lr"] == arm.rates[0]


def test_the_tuning_budget_and_the_glue_check_run_through_the_command_line(tmp_path, monkeypatch, capsys):
    """Each choice the arena file documents, through `allennlp maelmo-arena` (its worker a FakeWorker: the
    command's own path, from the file to the printed table, is what runs)."""
    from tests import run_allennlp_in_process

    monkeypatch.chdir(PROJECT_ROOT)
    monkeypatch.setattr(Worker, "of", staticmethod(lambda core, gpu: FakeWorker(core, -1)))
    tuned = tmp_path / "tuned.jsonnet"
    tuned.write_text(
        f'(import "{FIXTURES / "tiny.jsonnet"}") + {{ tuning: {{ train: "tests/fixtures/lm/repetitive.txt" }} }}'
    )
    run_allennlp_in_process("maelmo-arena", str(tuned), "-s", str(tmp_path / "arena"))
    printed = capsys.readouterr().out
    assert "training lstm-lr0.003-seed1-tuning" in printed and "training lstm-lr0.003-seed1 " in printed
    assert "floor of the tuning budget's validation text" in printed
    budget = json.loads((tmp_path / "arena" / "tuning.json").read_text())["budget"]
    assert budget["train"] == str(PROJECT_ROOT / "tests" / "fixtures" / "lm" / "repetitive.txt")

    missing = tmp_path / "missing.jsonnet"
    missing.write_text(
        f'(import "{FIXTURES / "tiny_glue.jsonnet"}") + {{ glue+: {{ directory: "{tmp_path / "empty"}" }} }}'
    )
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit) as refused:
        run_allennlp_in_process("maelmo-arena", str(missing), "-s", str(tmp_path / "other"))
    error = capsys.readouterr().err
    assert refused.value.code == 2 and "glue.tasks rte reads" in error and "Traceback" not in error
    assert not (tmp_path / "other" / "pretrain").exists()
