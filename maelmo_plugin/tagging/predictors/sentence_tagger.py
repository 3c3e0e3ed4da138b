from allennlp.common.util import JsonDict
from allennlp.data import DatasetReader, Instance
from allennlp.data.dataset_readers.dataset_utils import span_utils
from allennlp.data.tokenizers import Token
from allennlp.data.tokenizers.spacy_tokenizer import SpacyTokenizer
from allennlp.models import Model
from allennlp.predictors.predictor import Predictor

SPANS_OF = {
    "BIOUL": span_utils.bioul_tags_to_spans,
    "BIO": span_utils.bio_tags_to_spans,
    "IOB1": span_utils.iob1_tags_to_spans,
    "BMES": span_utils.bmes_tags_to_spans,
}


@Predictor.register("maelmo_sentence_tagger")
class SentenceTaggerPredictor(Predictor):
    """
    Tags raw sentences with a tagger such as allennlp-models' `crf_tagger` (the NER model of
    training_config/tagging/ner.jsonnet):

        echo '{"sentence": "John Smith lives in Paris."}' > in.jsonl
        allennlp predict model.tar.gz in.jsonl --predictor maelmo_sentence_tagger \
            --include-package maelmo_plugin

    writes `{"words": [...], "tags": [...], "spans": [{"label": "PER", "start": 0, "end": 1, "text": "John
    Smith"}, ...]}` per line (`end` inclusive, in words). Input already split into words, `{"tokens": [...]}`
    (as for `maelmo_representations`), is tagged as given. allennlp-models' `sentence_tagger` does the same
    but splits with spaCy's `en_core_web_sm`, which must be downloaded; this one uses spaCy's rule-based
    English tokenizer (`blank:en`), which ships with spaCy and splits punctuation off words as CoNLL-2003
    does.

    Registered as a `Predictor` with name "maelmo_sentence_tagger".

    # Parameters

    language : `str`, optional (default = `"blank:en"`)
        The spaCy pipeline that splits sentences into words (`--predictor-args '{"language": ...}'`).
    """

    def __init__(
        self, model: Model, dataset_reader: DatasetReader, frozen: bool = True, language: str = "blank:en"
    ) -> None:
        super().__init__(model, dataset_reader, frozen)
        self._tokenizer = SpacyTokenizer(language=language, pos_tags=False)

    def predict(self, sentence: str) -> JsonDict:
        return self.predict_json({"sentence": sentence})

    def _json_to_instance(self, json_dict: JsonDict) -> Instance:
        if "tokens" in json_dict:
            tokens = [Token(word) for word in json_dict["tokens"]]
        elif "sentence" in json_dict:
            tokens = self._tokenizer.tokenize(json_dict["sentence"])
        else:
            raise KeyError(
                f'Each input needs "sentence" (a string) or "tokens" (a list of words); got '
                f"{sorted(json_dict)}."
            )
        return self._dataset_reader.text_to_instance(tokens)

    def predict_instance(self, instance: Instance) -> JsonDict:
        return self._spans(super().predict_instance(instance))

    def predict_batch_instance(self, instances: list[Instance]) -> list[JsonDict]:
        return [self._spans(output) for output in super().predict_batch_instance(instances)]

    def _spans(self, output: JsonDict) -> JsonDict:
        """
        Words, tags, and the spans they make when the model names its tag scheme (`crf_tagger`'s
        `label_encoding`); the logits (words x tags) are left out.
        """
        words, tags = output["words"], output["tags"]
        result: JsonDict = {"words": words, "tags": tags}
        label_encoding = getattr(self._model, "label_encoding", None)
        to_spans = SPANS_OF.get(label_encoding) if label_encoding is not None else None
        if to_spans is not None:
            result["spans"] = [
                {"label": label, "start": start, "end": end, "text": " ".join(words[start : end + 1])}
                for label, (start, end) in sorted(to_spans(tags), key=lambda span: span[1])
            ]
        return result
