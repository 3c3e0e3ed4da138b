from typing import List

from allennlp.common.util import JsonDict, sanitize
from allennlp.data import Instance
from allennlp.predictors.predictor import Predictor


@Predictor.register("maelmo_glue")
class GluePredictor(Predictor):
    """
    Predicts GLUE labels and writes them in the GLUE submission format: a header `index<TAB>prediction`,
    then one line per row. Run it on a test file with the task's reader:

        allennlp predict model.tar.gz glue_data/RTE/test.tsv --use-dataset-reader \
            --predictor maelmo_glue --output-file RTE.tsv --include-package maelmo_plugin

    JSON input (`{"sentence": ...}` or `{"sentence1": ..., "sentence2": ...}`, optionally `"index"`) also
    works. STS-B predictions are written back on the 0-5 scale.

    Registered as a `Predictor` with name "maelmo_glue".
    """

    _header_written = False
    _rows = 0  # rows predicted so far: the index of JSON inputs that give none

    def _json_to_instance(self, json_dict: JsonDict) -> Instance:
        sentences = [json_dict[key] for key in ("sentence", "sentence1", "sentence2") if key in json_dict]
        return self._dataset_reader.text_to_instance(*sentences, index=json_dict.get("index"))

    def predict_batch_instance(self, instances: List[Instance]) -> List[JsonDict]:
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
            prediction = round(float(output["score"]) * 5.0, 3)
        else:
            prediction = output["label"]
        return {"index": index if index is not None else number, "prediction": prediction}

    def dump_line(self, outputs: JsonDict) -> str:
        row = f"{outputs['index']}\t{outputs['prediction']}\n"
        if not self._header_written:
            self._header_written = True
            return "index\tprediction\n" + row
        return row
