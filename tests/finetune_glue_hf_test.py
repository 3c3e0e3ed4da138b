"""
examples/finetune_glue_hf/finetune_glue_hf.py, the GLUE recipe for a Hugging Face export
(docs/hf_finetuning.md): it runs without AllenNLP and the plugin under transformers 4.x and 5.x, and its task
table, reader and metrics agree with the plugin's, which stay the definition.

The script runs as `__main__` (through `tests/hf/run_finetune_glue.py`) in one subprocess per version, with
`allennlp` and `maelmo_plugin` blocked, on the fixture export and the fixture RTE, STS-B and CoLA files for 3
updates, one an epoch: every epoch evaluated, the kept epoch the one with the highest `glue_score`, its
weights those of its checkpoint, and the reloaded model's `id2label` (STS-B: regression, one output). In this
process the tests check the script against the plugin: its imports (the standard library, numpy, torch,
transformers, scikit-learn, scipy), its task table against `maelmo_plugin/glue/tasks.py` (columns, labels,
the metric that ranks each task), its reading of the nine tasks' fixture files against the `maelmo_glue`
reader, its metrics against `GlueMetric` on made-up predictions for each task and on constant ones, its
error messages, and that the page's `compute_metrics` block is the script's code.
"""

import ast
import importlib.util
import inspect
import json
import re
import sys
from pathlib import Path

import numpy
import pytest
import torch
from safetensors.torch import load_file

from maelmo_plugin.glue.dataset_readers.glue import GlueReader
from maelmo_plugin.glue.metrics import _SELECTION, GlueMetric
from maelmo_plugin.glue.tasks import GLUE_TASKS, STSB_MAX_SCORE
from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.hf import run_without_plugin

SCRIPT = PROJECT_ROOT / "examples" / "finetune_glue_hf" / "finetune_glue_hf.py"
spec = importlib.util.spec_from_file_location("finetune_glue_hf", SCRIPT)
finetune_glue_hf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(finetune_glue_hf)

RUN_SCRIPT = Path(__file__).parent / "hf" / "run_finetune_glue.py"
# The tasks run end to end under each version: a classification task, the regression one, and CoLA (files
# without a header, Matthews correlation). Loading transformers is most of the time (about 5 s); each run
# then takes about 1 s.
RUNS = ("rte", "stsb", "cola")
GLUE = FIXTURES_ROOT / "glue"


@pytest.fixture(scope="module", params=["4", "5"])
def finetuned(request, masked_elmo_export, tmp_path_factory) -> tuple[Path, dict]:
    """The script run on each task of RUNS under transformers 4.x or 5.x: its output folder and the reloads."""
    work = tmp_path_factory.mktemp(f"finetune_transformers{request.param}")
    # The fixture files hold 2 or 3 training rows: one update per epoch at batch 4, so 3 epochs.
    settings = ["--export", masked_elmo_export, "--glue-dir", str(GLUE)]
    settings += ["--batch-size", "4", "--max-steps", "3"]
    runs = {
        task: [*settings, "--task", task, "--output-dir", str(work / task), "--learning-rate", "1e-2"]
        for task in RUNS
    }
    return work, run_without_plugin(RUN_SCRIPT, {"script": str(SCRIPT), "runs": runs}, request.param, work)


def test_it_evaluates_every_epoch_and_keeps_the_best_one(finetuned):
    work, result = finetuned
    for task, run in result["runs"].items():
        summary = json.loads((work / task / "glue_metrics.json").read_text())
        assert [record["epoch"] for record in summary["epochs"]] == [1.0, 2.0, 3.0]
        ranked_by = _SELECTION.get(task, "accuracy")
        assert all(record["glue_score"] == record[ranked_by] for record in summary["epochs"])
        best = max(summary["epochs"], key=lambda record: record["glue_score"])
        assert (summary["best_epoch"], summary["best_glue_score"]) == (best["epoch"], best["glue_score"])
        # OUTPUT_DIR holds the best epoch's weights, which its checkpoint also keeps.
        kept = load_file(str(work / task / "model.safetensors"))
        checkpoint = load_file(str(summary["best_checkpoint"] + "/model.safetensors"))
        assert kept.keys() == checkpoint.keys() and all(kept[name].equal(checkpoint[name]) for name in kept)
        labels = GLUE_TASKS[task].labels
        if labels is None:
            assert (run["problem_type"], run["num_labels"]) == ("regression", 1)
        else:
            assert run["problem_type"] == "single_label_classification"
            assert run["id2label"] == {str(index): label for index, label in enumerate(labels)}
        print(f"transformers {result['transformers_version']}: {task} in {run['seconds']:.1f} s")


def test_it_imports_neither_allennlp_nor_the_plugin():
    # Run under transformers 5.x, where nothing of AllenNLP is installed: the subprocess above blocks them.
    # Statically too: the standard library, and the packages a user of an export installs.
    allowed = set(sys.stdlib_module_names) | {"numpy", "torch", "transformers", "sklearn", "scipy"}
    imported = set()
    for node in ast.walk(ast.parse(SCRIPT.read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    assert imported and imported <= allowed, imported - allowed


def test_its_task_table_agrees_with_the_plugins():
    assert set(finetune_glue_hf.TASKS) == set(GLUE_TASKS) - {"ax"}  # AX is a diagnostic set, not trained on
    for name, task in finetune_glue_hf.TASKS.items():
        plugin = GLUE_TASKS[name]
        assert task.folder == plugin.folder
        assert len(task.sentences) == len(plugin.sentence_columns)
        assert all(column in aliases for column, aliases in zip(task.sentences, plugin.sentence_columns))
        assert task.label in plugin.label_columns
        assert task.labels == plugin.labels and task.headerless == plugin.headerless_columns
    assert finetune_glue_hf.RANKED_BY == _SELECTION  # which metric ranks each task
    assert finetune_glue_hf.STSB_MAX_SCORE == STSB_MAX_SCORE


@pytest.mark.parametrize("name", sorted(set(GLUE_TASKS) - {"ax"}))
def test_it_reads_each_task_as_the_plugins_reader_does(name):
    task, reader = finetune_glue_hf.TASKS[name], GlueReader(name)
    for file_name in ("train.tsv", task.dev_file):
        path = str(GLUE / task.folder / file_name)
        examples = finetune_glue_hf.read_glue_file(path, task)
        instances = list(reader.read(path))
        assert len(examples) == len(instances) > 0
        for (sentences, label), instance in zip(examples, instances):
            # The plugin's default tokenizer splits on whitespace; the script keeps the text for the tokenizer.
            tokens = [[token.text for token in instance[field].tokens] for field in reader.task.field_names]
            assert [sentence.split() for sentence in sentences] == tokens
            if task.labels is None:
                assert label == pytest.approx(float(instance["label"].tensor))
            else:
                assert task.labels[label] == instance["label"].label


def made_up_predictions(name: str, seed: int = 0) -> tuple[numpy.ndarray, numpy.ndarray]:
    """Logits (STS-B: scores, shaped (n, 1) as Trainer gives them) and gold labels, float32 as Trainer's."""
    generator = numpy.random.default_rng(seed)
    if GLUE_TASKS[name].labels is None:
        gold = generator.uniform(0, 1, 40).astype(numpy.float32)
        return (gold + generator.normal(0, 0.3, 40)).astype(numpy.float32)[:, None], gold
    classes = len(GLUE_TASKS[name].labels)
    gold = generator.integers(0, classes, 40)
    # Logits that favour the gold class, but not always: every metric away from 0 and 1.
    logits = generator.normal(0, 1, (40, classes)) + numpy.eye(classes)[gold]
    return logits.astype(numpy.float32), gold


def plugin_metrics(name: str, predictions: numpy.ndarray, gold: numpy.ndarray) -> dict[str, float]:
    metric = GlueMetric(name)
    metric(torch.from_numpy(predictions), torch.from_numpy(gold))
    return metric.get_metric(reset=True)


@pytest.mark.parametrize("name", sorted(set(GLUE_TASKS) - {"ax"}))
def test_its_metrics_equal_the_plugins(name):
    # Each family: accuracy, F1 and their mean (MRPC, QQP), Matthews (CoLA), Pearson and Spearman (STS-B).
    predictions, gold = made_up_predictions(name)
    script = finetune_glue_hf.glue_metrics(name, predictions, gold)
    plugin = plugin_metrics(name, predictions, gold)
    assert script == pytest.approx(plugin, abs=1e-6) and script.keys() == plugin.keys()
    assert 0.05 < abs(script["glue_score"]) < 1  # not a degenerate value that any code would give


@pytest.mark.parametrize("name", ["cola", "mrpc", "stsb"])
def test_undefined_metrics_are_zero_as_in_the_plugin(name):
    # Constant predictions, as early in training: no Matthews or correlation, no positive class for F1.
    predictions, gold = made_up_predictions(name)
    predictions = numpy.zeros_like(predictions)
    if GLUE_TASKS[name].labels is not None:
        predictions[:, 0] = 1.0  # always class 0
    script = finetune_glue_hf.glue_metrics(name, predictions, gold)
    assert script == pytest.approx(plugin_metrics(name, predictions, gold), abs=1e-6)
    assert script[{"cola": "mcc", "mrpc": "f1", "stsb": "corr"}[name]] == 0.0


def test_the_docs_compute_metrics_is_the_scripts():
    blocks = re.findall(
        r"```python\n(.*?)```", (PROJECT_ROOT / "docs" / "hf_finetuning.md").read_text(), re.DOTALL
    )
    block = next(block for block in blocks if "def glue_metrics" in block)
    source = SCRIPT.read_text()
    ranked_by = next(line for line in source.splitlines() if line.startswith("RANKED_BY = "))
    for part in (ranked_by, inspect.getsource(finetune_glue_hf.glue_metrics)):
        assert part in block
    assert inspect.getsource(finetune_glue_hf.correlation) in block


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


RTE_HEADER = "index\tsentence1\tsentence2\tlabel\n"


@pytest.mark.parametrize(
    "name, text, message",
    [
        (
            "rte",
            RTE_HEADER + "0\tA cat .\tA cat .\tentailment\n1\tA dog .\tA dog\n",
            r"line 3: the row has 3 tab-separated",
        ),
        ("rte", RTE_HEADER + "0\tA cat .\tA cat .\tmaybe\n", r"line 2: the label 'maybe' is not one of"),
        (
            "stsb",
            "sentence1\tsentence2\tscore\nA .\tB .\tfive\n",
            r"line 2: the score 'five' is not a number",
        ),
        ("stsb", "sentence1\tsentence2\tscore\nA .\tB .\t6\n", r"line 2: the score '6' is outside \[0, 5\]"),
        ("rte", RTE_HEADER + "0\t \tA cat .\tentailment\n", r"line 2: a sentence is empty"),
        ("cola", "gj04\tyes\t\tA cat .\n", r"line 1: the label 'yes' is not one of \['0', '1'\]"),
    ],
)
def test_a_malformed_row_names_the_file_the_line_and_the_fix(tmp_path, name, text, message):
    path = write(tmp_path / "bad.tsv", text)
    task = finetune_glue_hf.TASKS[name]
    with pytest.raises(finetune_glue_hf.GlueFileError, match=re.escape(path) + ", " + message) as caught:
        finetune_glue_hf.read_glue_file(path, task)
    assert "Fix the row, or give --skip-malformed-rows" in str(caught.value)
    good_rows = text.count("\n") - (task.headerless is None) - 1
    assert len(finetune_glue_hf.read_glue_file(path, task, skip_malformed_rows=True)) == good_rows


def test_a_file_of_another_task_or_glues_test_file_is_refused(tmp_path):
    rte = finetune_glue_hf.TASKS["rte"]
    with pytest.raises(finetune_glue_hf.GlueFileError, match=r"line 1 \(header\): no 'sentence1' column"):
        finetune_glue_hf.read_glue_file(str(GLUE / "SST-2" / "train.tsv"), rte)
    with pytest.raises(finetune_glue_hf.GlueFileError, match=r"no 'label' column .*test.tsv has no labels"):
        finetune_glue_hf.read_glue_file(str(GLUE / "RTE" / "test.tsv"), rte)
    with pytest.raises(finetune_glue_hf.GlueFileError, match=r"empty\.tsv is empty"):
        finetune_glue_hf.read_glue_file(write(tmp_path / "empty.tsv", "\n"), rte)


def test_a_missing_file_stops_the_command_before_anything_loads(tmp_path, capsys):
    arguments = ["--export", str(tmp_path / "no-export"), "--task", "mnli", "--glue-dir", str(tmp_path)]
    with pytest.raises(SystemExit) as caught:
        finetune_glue_hf.main([*arguments, "--output-dir", str(tmp_path / "out")])
    assert caught.value.code == 2
    error = capsys.readouterr().err
    assert f"{tmp_path / 'MNLI' / 'train.tsv'} does not exist" in error
    assert "must hold MNLI/train.tsv and MNLI/dev_matched.tsv" in error
