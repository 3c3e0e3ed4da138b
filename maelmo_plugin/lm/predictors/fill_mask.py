import torch
from allennlp.common.checks import ConfigurationError
from allennlp.common.util import JsonDict, sanitize
from allennlp.data import DatasetReader, Instance
from allennlp.models import Model
from allennlp.predictors.predictor import Predictor

from maelmo_files.common.special_tokens import MASK
from maelmo_plugin.lm.models.masked_elmo_lm import MaskedElmoLanguageModel
from maelmo_plugin.lm.predictors.sentences import SentencePredictor, sentence_of


@Predictor.register("maelmo_fill_mask")
class FillMaskPredictor(SentencePredictor):
    """
    Fills each [MASK] of a sentence with a Masked ELMo (`maelmo_masked_elmo_lm`) archive: the `top_k` most
    probable word-pieces at each mask position, under the model's own tied softmax over h_L.

    The special word-pieces (every `[...]` entry: [PAD], [UNK], [CLS], [SEP], [MASK], [unusedN]) are never
    proposed: pre-training never made them targets (`MlmMasking` leaves them out), so the softmax runs over
    the other word-pieces only. The Hugging Face export (`allennlp maelmo-export`) does the same, so its
    `fill-mask` pipeline gives the same word-pieces and probabilities.

        echo '{"sentence": "The cat [MASK] on the mat."}' > in.jsonl
        allennlp predict model.tar.gz in.jsonl --predictor maelmo_fill_mask \
            --predictor-args '{"top_k": 3}' --include-package maelmo_plugin

    Input lines are `{"sentence": ...}` or `{"tokens": [...]}` with one or more `[MASK]`, read as
    `[CLS] ... [SEP]` from zero states (see `SentencePredictor`). All masks are predicted jointly from the
    one corrupted input, as in pre-training. Output lines hold `wordpieces` and `masks`: for each [MASK],
    its `position` in `wordpieces` and the `top_k` `wordpieces` with their `probabilities`.

    Registered as a `Predictor` with name "maelmo_fill_mask".

    # Parameters

    model : `Model`
        A `maelmo_masked_elmo_lm`. The ELMo baseline (`maelmo_elmo_lm`) predicts the next and previous tokens,
        not a masked one, so it is refused.
    dataset_reader : `DatasetReader`
        The archive's `maelmo_mlm_corpus` reader, whose tokenizer splits the sentences.
    top_k : `int`, optional (default = `5`)
        At most the number of word-pieces that are not special.
    frozen : `bool`, optional (default = `True`)
    """

    def __init__(
        self, model: Model, dataset_reader: DatasetReader, top_k: int = 5, frozen: bool = True
    ) -> None:
        if not isinstance(model, MaskedElmoLanguageModel):
            raise ConfigurationError(
                f"maelmo_fill_mask needs a Masked ELMo archive (maelmo_masked_elmo_lm); this one holds a "
                f"{type(model).__name__}, which was not trained to predict masked word-pieces. "
                f"Its vectors are available with the maelmo_representations predictor."
            )
        super().__init__(model, dataset_reader, frozen)
        # The masking module's rule for what pre-training never predicted: every "[...]" entry.
        self._never_predicted = model.never_predicted
        predictable = int((~self._never_predicted).sum())
        if type(top_k) is not int or not 1 <= top_k <= predictable:
            raise ConfigurationError(
                f"top_k must be an integer from 1 to {predictable} (the vocabulary less its "
                f"{len(self._never_predicted) - predictable} special entries, which are never proposed), "
                f"got {top_k!r}."
            )
        self._top_k = top_k
        self._mask_id = self._tokenizer.token_id(MASK)

    @staticmethod
    def check_json(json_dict: JsonDict, where: str) -> str:
        """As `SentencePredictor.check_json`, and the sentence must hold a [MASK], checked as the line is read."""
        key = SentencePredictor.check_json(json_dict, where)
        value = json_dict[key]
        if value and MASK not in value:  # an empty one gets the sentence's own message
            raise ValueError(
                f'{where}, field "{key}" has no {MASK}: write {MASK} where a word-piece is to be predicted.'
            )
        return key

    def predict_batch_instance(self, instances: list[Instance]) -> list[JsonDict]:
        sentences = [sentence_of(instance) for instance in instances]
        for sentence in sentences:
            if self._mask_id not in sentence.ids:
                raise ValueError(
                    f"{sentence.name} has no {MASK}: write {MASK} where a word-piece is to be predicted."
                )
        # Shape: (batch_size, num_tokens, dim)
        top = self._layers(instances)[-1]
        outputs = []
        for row, sentence in enumerate(sentences):
            positions = [position for position, id_ in enumerate(sentence.ids) if id_ == self._mask_id]
            with torch.no_grad():
                # Shape: (num_masks, vocab_size)
                logits = self._lm._output_logits(top[row, positions])
                never = self._never_predicted.to(logits.device)
                probabilities = logits.masked_fill(never, torch.finfo(logits.dtype).min).softmax(dim=-1)
            best, ids = probabilities.topk(self._top_k, dim=-1)
            masks = [
                {
                    "position": position,
                    "wordpieces": self._tokenizer.ids_to_pieces(ids_.tolist()),
                    "probabilities": p,
                }
                for position, ids_, p in zip(positions, ids, best)
            ]
            outputs.append({"wordpieces": sentence.wordpieces, "masks": masks})
        return sanitize(outputs)
