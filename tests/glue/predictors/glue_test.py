"""The maelmo_glue predictor on fixture models trained into a temporary directory: GLUE submission TSVs."""

import pytest
from allennlp.commands.train import train_model_from_file
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from maelmo_plugin.glue.predictors.glue import GluePredictor
from maelmo_plugin.glue.tasks import ENTAILMENT_LABELS
from tests import FIXTURES_ROOT

pytestmark = pytest.mark.usefixtures("with_glue_environment")

GLUE = FIXTURES_ROOT / "glue"


def train(config: str, directory) -> str:
    train_model_from_file(str(FIXTURES_ROOT / "glue_models" / config), str(directory))
    return str(directory / "model.tar.gz")


@pytest.fixture(scope="module")
def rte_archive(with_glue_environment, tmp_path_factory) -> str:
    return train("rte.jsonnet", tmp_path_factory.mktemp("rte"))


@pytest.fixture(scope="module")
def stsb_archive(with_glue_environment, tmp_path_factory) -> str:
    return train("stsb.jsonnet", tmp_path_factory.mktemp("stsb"))


def predictor(archive_file: str) -> GluePredictor:
    archive = load_archive(archive_file)
    # As in training_config/glue/, validation reads with a capped reader (here 1 row), which `allennlp
    # predict` uses by default: the predictor must lift the cap, or a submission would lose rows.
    assert archive.validation_dataset_reader.max_instances == 1
    predictor = Predictor.from_archive(archive, "maelmo_glue")
    assert isinstance(predictor, GluePredictor)
    return predictor


def submission(predictor: GluePredictor, test_file, batched: bool = True) -> str:
    """What `allennlp predict --use-dataset-reader` writes (batch size > 1 or 1)."""
    instances = list(predictor._dataset_reader.read(str(test_file)))
    if batched:
        outputs = predictor.predict_batch_instance(instances)
    else:
        outputs = [predictor.predict_instance(instance) for instance in instances]
    return "".join(predictor.dump_line(output) for output in outputs)


def parse(tsv: str):
    header, *rows = tsv.splitlines()
    return header, [row.split("\t") for row in rows]


def test_rte_test_file_becomes_a_glue_submission(rte_archive):
    tsv = submission(predictor(rte_archive), GLUE / "RTE" / "test.tsv")
    header, rows = parse(tsv)
    assert header == "index\tprediction"
    assert [index for index, _ in rows] == ["0", "1"]  # every row of test.tsv, with its index
    assert {label for _, label in rows} <= set(ENTAILMENT_LABELS)
    assert tsv.endswith("\n") and tsv.count("index\tprediction") == 1


def test_predictions_are_the_models_labels_one_by_one_or_batched(rte_archive):
    rte = predictor(rte_archive)
    instances = list(rte._dataset_reader.read(str(GLUE / "RTE" / "test.tsv")))
    labels = [output["label"] for output in rte._model.forward_on_instances(instances)]
    assert [label for _, label in parse(submission(rte, GLUE / "RTE" / "test.tsv"))[1]] == labels
    one_by_one = submission(predictor(rte_archive), GLUE / "RTE" / "test.tsv", batched=False)
    assert one_by_one == submission(predictor(rte_archive), GLUE / "RTE" / "test.tsv")


def test_json_input_is_numbered_unless_it_has_an_index(rte_archive):
    rte = predictor(rte_archive)
    pair = {"sentence1": "The cat sat on the mat .", "sentence2": "A cat sat ."}
    first, second = rte.predict_json(pair), rte.predict_json(pair)
    given = rte.predict_json({**pair, "index": 42})
    assert (first["index"], second["index"], given["index"]) == (0, 1, 42)
    assert first["prediction"] == second["prediction"] == given["prediction"] in ENTAILMENT_LABELS


def test_stsb_predictions_are_on_the_0_to_5_scale(stsb_archive):
    stsb = predictor(stsb_archive)
    instances = list(stsb._dataset_reader.read(str(GLUE / "STS-B" / "test.tsv")))
    scores = [float(output["score"]) for output in stsb._model.forward_on_instances(instances)]
    header, rows = parse(submission(stsb, GLUE / "STS-B" / "test.tsv"))
    assert header == "index\tprediction"
    assert [index for index, _ in rows] == ["0"]
    expected = [round(min(max(score * 5, 0.0), 5.0), 3) for score in scores]
    assert [float(prediction) for _, prediction in rows] == expected


def test_stsb_predictions_are_clipped_to_the_scale_as_jiant_does(stsb_archive, monkeypatch):
    stsb = predictor(stsb_archive)
    instances = list(stsb._dataset_reader.read(str(GLUE / "STS-B" / "test.tsv"))) * 3
    model_outputs = [{"score": s, "metadata": {"index": i}} for i, s in enumerate([1.3, -0.2, 0.5012])]
    monkeypatch.setattr(stsb._model, "forward_on_instances", lambda instances: model_outputs)
    rows = stsb.predict_batch_instance(instances)
    assert [row["prediction"] for row in rows] == [5.0, 0.0, 2.506]
