import socket

import pytest
import torch
import torch.multiprocessing as mp
from allennlp.common import Params
from allennlp.common.testing.distributed_test import init_process
from allennlp.data import Vocabulary
from allennlp.training.metrics import Metric
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

from maelmo_plugin.glue.metrics import GlueMetric

SIZE = 101
# Uneven batches, as the last batch of an epoch is.
BATCHES = [30, 30, 30, 11]
NUM_CLASSES = {"cola": 2, "sst2": 2, "mrpc": 2, "qqp": 2, "mnli": 3, "qnli": 2, "rte": 2, "wnli": 2}


def classification_data(task: str, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(SIZE, NUM_CLASSES[task], generator=generator)
    gold = torch.randint(NUM_CLASSES[task], (SIZE,), generator=generator)
    return logits, gold


def regression_data(seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    gold = torch.rand(SIZE, generator=generator)
    # Correlated with the gold scores, so the correlations are far from 0.
    return gold + 0.3 * torch.randn(SIZE, generator=generator), gold


def feed(metric: GlueMetric, predictions: torch.Tensor, gold: torch.Tensor) -> None:
    for batch_predictions, batch_gold in zip(predictions.split(BATCHES), gold.split(BATCHES)):
        metric(batch_predictions, batch_gold)


def expected_classification(task: str, logits, gold, positive: int = 1) -> dict:
    predicted = logits.argmax(-1).numpy()
    if task == "cola":
        mcc = matthews_corrcoef(gold.numpy(), predicted)
        return {"mcc": mcc, "glue_score": mcc}
    accuracy = accuracy_score(gold.numpy(), predicted)
    if task not in ("mrpc", "qqp"):
        return {"accuracy": accuracy, "glue_score": accuracy}
    f1 = f1_score(gold.numpy(), predicted, pos_label=positive)
    both = (accuracy + f1) / 2
    return {"accuracy": accuracy, "f1": f1, "acc_and_f1": both, "glue_score": both}


def expected_regression(scores, gold) -> dict:
    pearson, spearman = pearsonr(scores.numpy(), gold.numpy())[0], spearmanr(scores.numpy(), gold.numpy())[0]
    corr = (pearson + spearman) / 2
    return {"pearson": pearson, "spearman": spearman, "corr": corr, "glue_score": corr}


def assert_metrics(actual: dict, expected: dict) -> None:
    assert actual.keys() == expected.keys()
    # Python floats, never numpy scalars or tensors: checkpoints must load with weights_only.
    assert all(type(value) is float for value in actual.values())
    assert actual == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("task", sorted(NUM_CLASSES))
@pytest.mark.parametrize("seed", [0, 1])
def test_classification_metrics_match_sklearn(task, seed):
    logits, gold = classification_data(task, seed)
    metric = GlueMetric(task)
    feed(metric, logits, gold)
    assert_metrics(metric.get_metric(), expected_classification(task, logits, gold))


@pytest.mark.parametrize("seed", [0, 1])
def test_stsb_correlations_match_scipy(seed):
    scores, gold = regression_data(seed)
    metric = GlueMetric("STS-B")
    feed(metric, scores, gold)
    assert_metrics(metric.get_metric(), expected_regression(scores, gold))


def test_stsb_accepts_scores_of_shape_batch_by_one():
    scores, gold = regression_data()
    metric = GlueMetric("stsb")
    feed(metric, scores.unsqueeze(-1), gold)
    expected = pearsonr(scores.numpy(), gold.numpy())[0]
    assert metric.get_metric()["pearson"] == pytest.approx(expected, abs=1e-6)


def test_f1_uses_the_positive_label_index_from_the_vocabulary():
    vocab = Vocabulary()
    # A frequency-ordered label namespace can put "1" first.
    vocab.add_tokens_to_namespace(["1", "0"], "labels")
    metric = GlueMetric.from_vocab("MRPC", vocab)
    logits, gold = classification_data("mrpc")
    feed(metric, logits, gold)
    assert_metrics(metric.get_metric(), expected_classification("mrpc", logits, gold, positive=0))


def test_reset_starts_a_new_accumulation():
    logits, gold = classification_data("cola")
    metric = GlueMetric("cola")
    feed(metric, logits, gold)
    first = metric.get_metric(reset=True)
    assert metric.get_metric() == {"mcc": 0.0, "glue_score": 0.0}
    feed(metric, logits, gold)
    assert metric.get_metric() == first


@pytest.mark.parametrize("task", sorted(NUM_CLASSES) + ["stsb"])
def test_a_metric_with_no_data_yet_reports_zeros(task):
    """As `model.get_metrics()` does before the first batch (F1Measure alone would raise)."""
    metric = GlueMetric(task)
    assert set(metric.get_metric().values()) == {0.0}
    data = regression_data() if task == "stsb" else classification_data(task)
    feed(metric, *data)
    metric.get_metric(reset=True)
    assert set(metric.get_metric().values()) == {0.0}


def test_undefined_scores_are_zero_like_sklearn():
    cola = GlueMetric("cola")
    # Always predicting class 1: sklearn's MCC is 0 too.
    cola(torch.tensor([[0.0, 1.0]] * 4), torch.tensor([0, 1, 1, 0]))
    assert cola.get_metric()["mcc"] == 0.0 == matthews_corrcoef([0, 1, 1, 0], [1, 1, 1, 1])
    stsb = GlueMetric("stsb")
    assert stsb.get_metric()["corr"] == 0.0
    stsb(torch.full((4,), 0.5), torch.tensor([0.1, 0.2, 0.3, 0.4]))
    assert stsb.get_metric() == {"pearson": 0.0, "spearman": 0.0, "corr": 0.0, "glue_score": 0.0}


def test_mask_leaves_out_rows():
    logits, gold = classification_data("rte")
    mask = torch.arange(SIZE) % 3 != 0
    metric = GlueMetric("rte")
    metric(logits, gold, mask)
    assert_metrics(metric.get_metric(), expected_classification("rte", logits[mask], gold[mask]))


def test_wrong_prediction_shapes_are_reported():
    with pytest.raises(ValueError, match=r"MNLI .* must be logits of shape \(batch_size, 3\), got \(4, 2\)"):
        GlueMetric("mnli")(torch.zeros(4, 2), torch.zeros(4))
    with pytest.raises(ValueError, match="got 8 scores for 4 gold scores"):
        GlueMetric("stsb")(torch.zeros(4, 2), torch.zeros(4))


def test_built_from_params_with_the_registered_name():
    metric = Metric.from_params(Params({"type": "maelmo_glue", "task": "QQP"}))
    assert isinstance(metric, GlueMetric)
    logits, gold = classification_data("qqp")
    feed(metric, logits, gold)
    expected = expected_classification("qqp", logits, gold)["glue_score"]
    assert metric.get_metric()["glue_score"] == pytest.approx(expected)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


DISTRIBUTED_TASKS = ["cola", "mrpc", "stsb"]


def _data(task: str):
    return regression_data() if task == "stsb" else classification_data(task)


def _expected(task: str) -> dict:
    if task == "stsb":
        return expected_regression(*_data(task))
    return expected_classification(task, *_data(task))


def _distributed_check(global_rank: int, world_size: int, gpu_id: int) -> None:
    """Each process gets different, unevenly sized parts of the data; every one must see the total."""
    for task in DISTRIBUTED_TASKS:
        predictions, gold = _data(task)
        metric = GlueMetric(task)
        # Rank 0 takes rows 0-29 and 60-79, rank 1 rows 30-59 and 80-100: 50 and 51 rows.
        cuts = [0, 30, 60, 80, SIZE]
        for call in range(2):
            start, end = cuts[2 * call + global_rank], cuts[2 * call + global_rank + 1]
            metric(predictions[start:end], gold[start:end])
        assert_metrics(metric.get_metric(), _expected(task))


def test_distributed_metrics_cover_every_process():
    # As AllenNLP's run_distributed_test, but with a free port (it always takes 29500) and "spawn":
    # a process forked after torch has started its thread pool can deadlock.
    mp.start_processes(
        init_process,
        args=(2, [-1, -1], _distributed_check, (), {}, "127.0.0.1", _free_port()),
        nprocs=2,
        start_method="spawn",
    )
