"""scripts/finetune_glue_hf.py: a few `Trainer` steps on the fixture export and the fixture GLUE files."""

import importlib.util
import json

import pytest
from safetensors.torch import load_file
from transformers import AutoModelForSequenceClassification

from maelmo_plugin.hf.export import export_archive
from tests import FIXTURES_ROOT, PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "finetune_glue_hf.py"
spec = importlib.util.spec_from_file_location("finetune_glue_hf", SCRIPT)
finetune_glue_hf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(finetune_glue_hf)


@pytest.fixture(scope="module")
def export(masked_elmo_archive, tmp_path_factory) -> str:
    return export_archive(masked_elmo_archive, str(tmp_path_factory.mktemp("finetune") / "masked_elmo"))


@pytest.mark.parametrize("task, metric", [("rte", "accuracy"), ("stsb", "pearson")])
def test_it_evaluates_every_epoch_and_keeps_the_best_one(export, tmp_path, task, metric):
    output = tmp_path / task
    arguments = ["--export", export, "--task", task, "--glue-dir", str(FIXTURES_ROOT / "glue")]
    # The fixture files hold 2 (RTE) and 3 (STS-B) training rows: one update per epoch at batch 4.
    arguments += ["--output-dir", str(output), "--batch-size", "4", "--max-steps", "3"]
    arguments += ["--learning-rate", "1e-2"]
    summary = finetune_glue_hf.main(arguments)
    assert [record["epoch"] for record in summary["epochs"]] == [1.0, 2.0, 3.0]
    assert all(metric in record and "glue_score" in record for record in summary["epochs"])
    best = max(summary["epochs"], key=lambda record: record["glue_score"])
    assert (summary["best_epoch"], summary["best_glue_score"]) == (best["epoch"], best["glue_score"])
    assert json.loads((output / "glue_metrics.json").read_text()) == summary
    # OUTPUT_DIR holds the best epoch's weights, which its checkpoint also keeps.
    kept = load_file(str(output / "model.safetensors"))
    checkpoint = load_file(str(summary["best_checkpoint"] + "/model.safetensors"))
    assert kept.keys() == checkpoint.keys() and all(kept[name].equal(checkpoint[name]) for name in kept)
    model = AutoModelForSequenceClassification.from_pretrained(str(output), trust_remote_code=True)
    if task == "rte":
        assert model.config.id2label == {0: "entailment", 1: "not_entailment"}
    else:
        assert model.config.problem_type == "regression" and model.config.num_labels == 1
