"""maelmo_plugin/arena/plan.py: an arena file read, and each bad field refused in one line naming it."""

import json

import pytest

from maelmo_declarations.refusals import Refusal
from maelmo_plugin.arena import runner
from maelmo_plugin.arena.plan import DEFAULT_TOLERANCE, read_plan
from tests import PROJECT_ROOT

TINY = PROJECT_ROOT / "tests" / "fixtures" / "arena" / "tiny.jsonnet"


def spec(**changes) -> dict:
    base = {
        "arms": {
            "masked_elmo": {"config": "lm/pretrain_small", "rates": [2e-3, 1e-3]},
            "lstm": {
                "config": "lm/pretrain_small",
                "encoder": {"type": "lstm", "input_size": 128, "hidden_size": 64, "bidirectional": True},
                "rates": [1e-2],
            },
        },
        "corpus": {
            "train": "tests/fixtures/lm/corpus.txt",
            "validation": "tests/fixtures/lm/corpus.txt",
            "vocab": "tests/fixtures/lm/vocab.txt",
        },
        "epochs": 2,
        "seeds": [1, 2],
    }
    return {**base, **changes}


def written(tmp_path, content: dict) -> str:
    path = tmp_path / "arena.json"
    path.write_text(json.dumps(content))
    return str(path)


def test_an_arena_file_reads_as_its_plan(tmp_path, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)  # paths from the working directory, as a training config's
    plan = read_plan(written(tmp_path, spec()))
    assert [arm.name for arm in plan.arms] == ["lstm", "masked_elmo"]  # Jsonnet's field order
    elmo = plan.arm("masked_elmo")
    assert elmo.rates == (1e-3, 2e-3) and elmo.encoder is None
    assert elmo.config == str(PROJECT_ROOT / "training_config" / "lm" / "pretrain_small.jsonnet")
    assert plan.arm("lstm").encoder["type"] == "lstm"
    assert plan.corpus["vocab"] == str(PROJECT_ROOT / "tests" / "fixtures" / "lm" / "vocab.txt")
    assert (plan.epochs, plan.seeds, plan.glue) == (2, (1, 2), None)
    assert plan.parameter_tolerance == DEFAULT_TOLERANCE and plan.tuning is None


def test_a_tuning_budget_takes_the_arenas_fields_it_does_not_give(tmp_path, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    plan = read_plan(
        written(tmp_path, spec(tuning={"train": "tests/fixtures/lm/repetitive.txt", "epochs": 1}))
    )
    assert plan.tuning is not None and plan.tuning.epochs == 1 and plan.epochs == 2
    assert plan.tuning.train == str(PROJECT_ROOT / "tests" / "fixtures" / "lm" / "repetitive.txt")
    assert plan.tuning.validation == plan.corpus["validation"]


def test_the_tiny_fixture_reads_with_its_glue_tasks(monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    plan = read_plan(str(TINY.with_name("tiny_glue.jsonnet")))
    assert plan.glue is not None and plan.glue.tasks == ("rte",) and plan.glue.modes == ("ft", "fz")
    assert (plan.glue.validations, plan.glue.head_hidden) == (1, 8)


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"arms": {"one": {"config": "lm/pretrain_small", "rates": [1e-3]}}}, "arms"),
        ({"corpus": {"train": "tests/fixtures/lm/corpus.txt"}}, "corpus"),
        ({"epochs": 0}, "epochs"),
        ({"epochs": 1.5}, "epochs"),
        ({"seeds": [1]}, "seeds"),
        ({"seeds": [1, 1]}, "seeds"),
        ({"seeds": [1, 2**40]}, "seeds"),  # numpy's seed is at most 2**32 - 1
        ({"seeds": [-1, 2]}, "seeds"),
        ({"parameter_tolerance": -0.1}, "parameter_tolerance"),
        ({"budget": 3}, "budget"),
        ({"glue": {"directory": "tests/fixtures/glue", "tasks": ["squad"]}}, "glue.tasks"),
        ({"glue": {"directory": "tests/fixtures/glue", "tasks": ["rte"], "modes": ["frozen"]}}, "glue.modes"),
        (
            {"glue": {"directory": "tests/fixtures/glue", "tasks": ["rte"], "validations": 0}},
            "glue.validations",
        ),
        ({"glue": {"directory": "no/such/glue", "tasks": ["rte"]}}, "glue.directory"),
        ({"tuning": {}}, "tuning"),
        ({"tuning": {"epochs": 0}}, "tuning.epochs"),
        ({"tuning": {"train": "no/such/subset.txt"}}, "tuning.train"),
        ({"tuning": {"rates": [1e-3]}}, "tuning.rates"),
    ],
)
def test_a_bad_field_is_refused_naming_it(changes, field, tmp_path, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    path = written(tmp_path, spec(**changes))
    with pytest.raises(Refusal, match=f"^{path}: {field} "):
        read_plan(path)


@pytest.mark.parametrize(
    "arm, field",
    [
        ({"config": "lm/pretrain_small", "rates": []}, "rates"),
        ({"config": "lm/pretrain_small", "rates": [-1e-3]}, "rates"),
        ({"config": "lm/pretrain_small", "rates": [1e-3, 1e-3]}, "rates"),
        ({"config": "lm/pretrain_small", "rates": [1e-3], "encoder": {"hidden_size": 8}}, "encoder"),
        ({"config": "lm/no_such_config", "rates": [1e-3]}, "config"),
        ({"config": "lm/pretrain_small", "rates": [1e-3], "lr": 1}, "lr"),
    ],
)
def test_a_bad_arm_is_refused_naming_its_field(arm, field, tmp_path, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    path = written(tmp_path, spec(arms={"masked_elmo": arm, "lstm": spec()["arms"]["lstm"]}))
    with pytest.raises(Refusal, match=f"^{path}: arms.masked_elmo.{field} "):
        read_plan(path)


def test_an_arm_name_that_cannot_name_a_folder_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    arms = {"../up": spec()["arms"]["lstm"], "lstm": spec()["arms"]["lstm"]}
    with pytest.raises(Refusal, match=r"arms\.\.\./up is not a name"):
        read_plan(written(tmp_path, spec(arms=arms)))


def test_a_file_that_is_not_jsonnet_is_one_refusal(tmp_path):
    path = tmp_path / "arena.jsonnet"
    path.write_text("{ arms: ")
    with pytest.raises(Refusal, match="cannot be read as an arena file"):
        read_plan(str(path))


def test_the_packaged_arena_reads_as_a_parameter_matched_plan(tmp_path, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    fixtures = PROJECT_ROOT / "tests" / "fixtures"
    monkeypatch.setenv("MAELMO_TRAIN_PATH", str(fixtures / "lm" / "corpus.txt"))
    monkeypatch.setenv("MAELMO_VALIDATION_PATH", str(fixtures / "lm" / "corpus.txt"))
    monkeypatch.setenv("MAELMO_VOCAB", str(fixtures / "lm" / "vocab.txt"))
    monkeypatch.setenv("MAELMO_GLUE_DIR", str(fixtures / "glue"))
    plan = read_plan(str(PROJECT_ROOT / "examples" / "encoder_arena" / "lstm_vs_masked_elmo.jsonnet"))
    assert [arm.name for arm in plan.arms] == ["lstm", "masked_elmo"] and len(plan.seeds) == 3
    report = runner.parameter_report(plan, tmp_path, False, lambda said: None)  # refuses beyond its 10%
    assert report["spread"]["encoder"] < plan.parameter_tolerance
