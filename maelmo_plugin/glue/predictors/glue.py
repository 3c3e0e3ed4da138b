from allennlp.common.util import JsonDict, sanitize
from allennlp.data import DatasetReader, Instance
from allennlp.models import Model
from allennlp.predictors.predictor import Predictor

from maelmo_plugin.glue.dataset_readers.glue import GlueReader
from maelmo_plugin.glue.tasks import STSB_MAX_SCORE


@Predictor.register("maelmo_glue")
class GluePredictor(Predictor):
    """
    Predicts GLUE labels and writes them in the GLUE submission format: a header `index<TAB>prediction`,
    then one line per row. Run it on a test file with the task's reader:

        allennlp predict model.tar.gz glue_data/RTE/test.tsv --use-dataset-reader \
            --predictor maelmo_glue --output-file RTE.tsv --silent --include-package maelmo_plugin

    JSON input (`{"sentence": ...}` or `{"sentence1": ..., "sentence2": ...}`, optionally `"index"`) also
    works. STS-B predictions are written back on the 0-5 scale, clipped to it as jiant does.

    A submission needs every test row, so a `max_instances` cap on the reader (`allennlp predict` reads
    with the validation reader, which a user may have capped) is lifted, and the reader is told to accept
    unlabelled test files (which it refuses for training and evaluation).

    Registered as a `Predictor` with name "maelmo_glue".
    """

    def __init__(self, model: Model, dataset_reader: DatasetReader, frozen: bool = True) -> None:
        super().__init__(model, dataset_reader, frozen)
        self._dataset_reader.max_instances = None
        if isinstance(self._dataset_reader, GlueReader):
            self._dataset_reader.allow_unlabelled = True
        self._header_written = False
        self._rows = 0  # rows predicted so far: the index of JSON inputs that give none

    def _json_to_instance(self, json_dict: JsonDict) -> Instance:
        sentences = [json_dict[key] for key in ("sentence", "sentence1", "sentence2") if key in json_dict]
        reader = self._dataset_reader
        assert isinstance(reader, GlueReader), f"a GLUE archive's reader, not a {type(reader).__name__}"
        return reader.text_to_instance(*sentences, index=json_dict.get("index"))

    def predict_batch_instance(self, instances: list[Instance]) -> list[JsonDict]:
        for instance in instances:  # text_to_instance leaves them to the caller, as AllenNLP's Predictor does
            self._dataset_reader.apply_token_indexers(instance)
        outputs = self._model.forward_on_instances(instances)
        rows = [self._submission_row(output, self._rows + number) for number, output in enumerate(outputs)]
        self._rows += len(rows)
        return sanitize(rows)

    def predict_instance(self, instance: Instance) -> JsonDict:
        return self.predict_batch_instance([instance])[0]

    def _submission_row(self, output: JsonDict, number: int) -> JsonDict:
        metadata = output.get("metadata") or {}
        index = metadata.get("index")
        if "score" in output:
            prediction = round(min(max(float(output["score"]) * STSB_MAX_SCORE, 0.0), STSB_MAX_SCORE), 3)
        else:
            prediction = output["label"]
        return {"index": index if index is not None else number, "prediction": prediction}

    def dump_line(self, outputs: JsonDict) -> str:
        row = f"{outputs['index']}\t{outputs['prediction']}\n"
        if not self._header_written:
            self._header_written = True
            return "index\tprediction\n" + row
        return row
