"""
What the `maelmo_representations` and `maelmo_fill_mask` predictors share: checking the archive, turning
one input sentence into word-pieces aligned with its words, and running the language model on a batch.

A sentence is read as a one-sentence paragraph of pre-training, `[CLS] w1 ... wn [SEP]`:

    input       "The cat sleeps."                    or  ["The", "cat", "sleeps."]
    wordpieces  [CLS]  The  cat  s  ##lee  ##ps  .  [SEP]
    position      0     1    2   3    4      5   6    7
    words             The  cat  sleeps           .       ("sentence": BERT's split on spaces and punctuation)
                      The  cat  sleeps.                  ("tokens": the given words)
    alignment        [1]  [2]  [3, 4, 5]        [6]      word -> its positions in `wordpieces`
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.common.util import JsonDict
from allennlp.data import Batch, DatasetReader, Instance
from allennlp.data.fields import MetadataField, TextField
from allennlp.data.tokenizers import Token
from allennlp.models import Model
from allennlp.nn import util
from allennlp.predictors.predictor import Predictor
from tokenizers import Encoding

from maelmo_declarations.refusals import Refusal
from maelmo_files.common.special_tokens import CLS, PAD, SEP
from maelmo_plugin.common.wordpiece import WordpieceTokenizer, wordpiece_id_indexer
from maelmo_plugin.lm.models.wordpiece_lm import WordpieceLanguageModel


@dataclass
class Sentence:
    """One input sentence in word-pieces (with [CLS] first and [SEP] last) and its words."""

    wordpieces: list[str]
    ids: list[int]
    words: list[str]
    alignment: list[list[int]]  # word i -> its positions in `wordpieces`
    name: str  # where it comes from, for error messages: 'input 3, field "sentence"', 'line 3 of in.txt'


class SentencePredictor(Predictor):
    """
    Base of the predictors that read sentences (not registered itself). Input JSON objects hold either
    `"sentence"`: a string, or `"tokens"`: a list of words. Each runs from zero LSTM states with nothing
    masked (the model is in eval mode), alone or padded in a batch (padding does not change the result).

    An LSTM encoder has no length limit: no position embeddings, so no maximum length. A sentence longer
    than the pre-training window is read whole rather than cut into windows, which would take context away
    from the positions near each cut. BERT*'s transformer reads at most its `max_positions` word-pieces: a
    longer sentence is refused, named.
    """

    def __init__(self, model: Model, dataset_reader: DatasetReader, frozen: bool = True) -> None:
        if not isinstance(model, WordpieceLanguageModel):
            raise ConfigurationError(
                f"The archive holds a {type(model).__name__} model, not a Masked ELMo or ELMo language model "
                f"(maelmo_masked_elmo_lm / maelmo_elmo_lm): give the model.tar.gz of a pre-training run."
            )
        tokenizer = getattr(dataset_reader, "tokenizer", None)
        if not isinstance(tokenizer, WordpieceTokenizer):
            raise ConfigurationError(
                f"The archive's dataset reader ({type(dataset_reader).__name__}) has no word-piece "
                f"tokenizer; these predictors need the maelmo_mlm_corpus reader of a pre-training run."
            )
        super().__init__(model, dataset_reader, frozen)
        # `self._model`, typed as the language model checked above.
        self._lm: WordpieceLanguageModel = model
        self._tokenizer = tokenizer
        self._inputs_read = 0

    def _json_to_instance(self, json_dict: JsonDict) -> Instance:
        self._inputs_read += 1
        where = f"input {self._inputs_read}"
        key = self.check_json(json_dict, where)
        return self.sentence_instances([json_dict[key]], [f'{where}, field "{key}"'])[0]

    @staticmethod
    def check_json(json_dict: JsonDict, where: str) -> str:
        """
        The field that holds `json_dict`'s sentence, "sentence" or "tokens", or a `ValueError` that names
        `where` ("input 3"; `allennlp predict` gives "in.jsonl, line 4") and what is wrong.
        """
        if not isinstance(json_dict, dict):
            raise Refusal(
                f'{where} must be a JSON object such as {{"sentence": "..."}}, got {json_dict!r:.80}.'
            )
        keys = [key for key in ("sentence", "tokens") if key in json_dict]
        if len(keys) != 1:
            raise Refusal(
                f'{where} must have exactly one of the fields "sentence" (a string) or "tokens" (a list of '
                f"words); it has the fields {sorted(json_dict)}."
            )
        key = keys[0]
        value = json_dict[key]
        if key == "sentence" and not isinstance(value, str):
            raise Refusal(f'{where}: the field "sentence" must be a string, got {value!r:.80}.')
        if key == "tokens" and not isinstance(value, list):
            raise Refusal(
                f'{where}: the field "tokens" must be a list of words (strings), got {value!r:.80}.'
            )
        return key

    def sentence_instances(self, sentences: Sequence[Any], names: Sequence[str]) -> list[Instance]:
        """
        One `Instance` per sentence (a string, or a list of words), with fields `tokens` (the word-pieces)
        and `sentence` (a `Sentence`). `names` say where each comes from, for error messages.
        """
        split = [not isinstance(sentence, str) for sentence in sentences]
        for sentence, name in zip(sentences, names):
            _check_input(sentence, name)
        encodings: list[Optional[Encoding]] = [None] * len(sentences)
        for is_split in (False, True):  # one batched tokenizer call for the strings, one for the word lists
            numbers = [number for number, flag in enumerate(split) if flag == is_split]
            if numbers:
                batch = self._tokenizer.batch_encodings([sentences[n] for n in numbers], is_split)
                for number, encoding in zip(numbers, batch):
                    encodings[number] = encoding
        instances = []
        for sentence, name, encoding in zip(sentences, names, encodings):
            aligned = self._align(sentence, name, encoding)
            tokens = [Token(text=piece, text_id=id_) for piece, id_ in zip(aligned.wordpieces, aligned.ids)]
            instances.append(
                Instance(
                    {
                        "tokens": TextField(tokens, {"tokens": wordpiece_id_indexer()}),
                        "sentence": MetadataField(aligned),
                    }
                )
            )
        return instances

    def predict_instance(self, instance: Instance) -> JsonDict:
        return self.predict_batch_instance([instance])[0]

    def _layers(self, instances: list[Instance], precision: str = "fp32") -> list[torch.Tensor]:
        """
        The model's L + 1 representations of a batch of these instances, each (batch_size, num_tokens, dim),
        the rows padded with [PAD] after their [SEP], with the encoder's products in `precision`.
        """
        batch = Batch(instances)
        batch.index_instances(self._model.vocab)  # the indexer copies Token.text_id: no look-up
        tensors = util.move_to_device(batch.as_tensor_dict(), self.cuda_device)
        token_ids = util.get_token_ids_from_text_field_tensors(tensors["tokens"])
        mask = util.get_text_field_mask(tensors["tokens"])
        # Inference mode, not only no_grad: no autograd state at all, and the encoder's inference recurrence.
        with torch.inference_mode():
            return self._lm.representations(token_ids, mask, precision)

    def _align(self, sentence: Any, name: str, encoding: Encoding) -> Sentence:
        if not encoding.ids:
            raise Refusal(f"{name} gives no word-piece (it holds only spaces or control characters).")
        if self._tokenizer.token_id(PAD) in encoding.ids:
            raise Refusal(f"{name} contains {PAD}, which the model would read as padding.")
        limit = getattr(self._lm.encoder, "max_positions", None)
        if limit is not None and len(encoding.ids) + 2 > limit:
            raise Refusal(
                f"{name} is {len(encoding.ids) + 2} word-pieces long ([CLS] and [SEP] included), more than the "
                f"{limit} positions of this model's encoder ({self._lm.encoder.configured_type}): split the line "
                f"(a Masked ELMo reads any length)."
            )
        word_ids, offsets = encoding.word_ids, encoding.offsets
        alignment: list[list[int]] = []
        for number, word_id in enumerate(word_ids):  # piece `number` is at position number + 1, after [CLS]
            if number == 0 or word_id is None or word_id != word_ids[number - 1]:
                alignment.append([])
            alignment[-1].append(number + 1)
        if isinstance(sentence, str):
            words = [sentence[offsets[pieces[0] - 1][0] : offsets[pieces[-1] - 1][1]] for pieces in alignment]
        else:
            missing = sorted(set(range(len(sentence))) - set(word_ids))
            if missing:
                raise Refusal(
                    f"{name}[{missing[0]}] ({sentence[missing[0]]!r}) gives no word-piece (it holds only "
                    f"spaces or control characters): leave such words out."
                )
            words = [sentence[word_ids[pieces[0] - 1]] for pieces in alignment]
        return Sentence(
            wordpieces=[CLS, *encoding.tokens, SEP],
            ids=[self._tokenizer.token_id(CLS), *encoding.ids, self._tokenizer.token_id(SEP)],
            words=words,
            alignment=alignment,
            name=name,
        )


def sentence_of(instance: Instance) -> Sentence:
    """The `Sentence` of an instance that `SentencePredictor.sentence_instances` made."""
    field = instance["sentence"]
    assert isinstance(field, MetadataField), "not an instance of SentencePredictor.sentence_instances"
    return field.metadata


def _check_input(sentence: Any, name: str) -> None:
    if isinstance(sentence, str):
        if not sentence.strip():
            raise Refusal(f"{name} is empty: give a sentence with at least one word.")
    elif isinstance(sentence, list):
        if not sentence:
            raise Refusal(f"{name} is an empty list: give at least one word.")
        for number, word in enumerate(sentence):
            if not isinstance(word, str):
                raise Refusal(f"{name}[{number}] must be a string (a word), got {word!r:.80}.")
    else:
        raise Refusal(f"{name} must be a string (or a list of words), got {sentence!r:.80}.")
