"""
Fine-tunes the task heads of a Hugging Face export with `transformers` alone (`Trainer`, pipelines), as a
user without AllenNLP would, and writes what it measured to a JSON file for `heads_test.py`. Run as a
script, in a subprocess under the venv's transformers 4.x or (with PYTHONPATH=<venv>/transformers5) 5.x:

    python tests/hf/train_heads.py REQUEST.json OUTPUT.json

REQUEST holds `export` (an export directory). Importing allennlp or maelmo_plugin fails in this process
(`without_plugin.py`). The data are tiny in-memory lists of dicts (no `datasets`), built from the fixture
vocabulary so that every word but the names is one word-piece.
"""

import contextlib
import itertools
import json
import logging
import sys
import tempfile
import time

import without_plugin  # noqa: F401  first: from here on allennlp and maelmo_plugin cannot be imported

# isort: split
import torch
import transformers
from transformers import (
    AutoModel,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    AutoTokenizer,
    DataCollatorForTokenClassification,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
    pipeline,
)

ANIMALS = ("cat", "dog", "fish")
PLACES = ("house", "river", "town", "road")
VERBS = ("sleeps", "eats", "runs", "lives")
# Names the fixture vocabulary splits into several word-pieces (T ##o ##m), for the label alignment.
NAMES = ("Tom", "Bob", "Anna", "Paul")
TAGS = {0: "O", 1: "B-ANIMAL", 2: "B-PLACE", 3: "B-PER"}
STEPS, BATCH, LEARNING_RATE = 40, 4, 3e-2


def sentence(index: int) -> str:
    return f"The {ANIMALS[index % 3]} {VERBS[index % 4]} near the {PLACES[index % 4]}."


def training_arguments(output_dir: str, **overrides) -> TrainingArguments:
    settings = {
        "output_dir": output_dir,
        "max_steps": STEPS,
        "per_device_train_batch_size": BATCH,
        "learning_rate": LEARNING_RATE,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": [],
        "use_cpu": True,  # no_cuda in 4.x before 4.34; both versions here take use_cpu
        "disable_tqdm": True,
        "seed": 0,
    }
    return TrainingArguments(**{**settings, **overrides})


def hand_loss(kind: str, logits: torch.Tensor, labels: torch.Tensor) -> float:
    """The loss each problem type should give, written out rather than through torch's loss functions."""
    logits = logits.double()
    if kind == "regression":
        return float(((logits.squeeze(-1) - labels) ** 2).mean())
    if kind == "multi_label_classification":
        log_p, log_not_p = torch.nn.functional.logsigmoid(logits), torch.nn.functional.logsigmoid(-logits)
        return float(-(labels * log_p + (1 - labels) * log_not_p).mean())
    # Single-label and token classification: the mean over the labels that are not -100.
    keep = labels != -100
    log_probabilities = logits.log_softmax(-1)[keep]
    return float(-log_probabilities.gather(-1, labels[keep].unsqueeze(-1)).mean())


def constant_loss(kind: str, logits: torch.Tensor, labels: torch.Tensor) -> float:
    """
    The loss of the best prediction that ignores the input (the labels' mean or frequencies): a head below it
    has learned from the encoder's features, not only the label distribution.
    """
    if kind == "regression":
        best = labels.double().mean()
    elif kind == "multi_label_classification":
        best = torch.logit(labels.double().mean(0), eps=1e-6)
    else:
        counts = torch.bincount(labels[labels != -100], minlength=logits.size(-1))
        best = counts.double().clamp(min=1e-6).log()
    return hand_loss(kind, best.expand_as(logits), labels)


def evaluate(model, collator, examples, kind: str) -> dict:
    """
    The model's own loss and the hand-written one over all `examples` in one padded batch, and the loss of
    the best input-blind prediction.
    """
    batch = collator([dict(example) for example in examples])
    was_training = model.training
    model.eval()
    with torch.no_grad():
        outputs = model(**batch)
    model.train(was_training)
    return {
        "model_loss": float(outputs.loss),
        "hand_loss": hand_loss(kind, outputs.logits, batch["labels"]),
        "constant_loss": constant_loss(kind, outputs.logits, batch["labels"]),
    }


def fine_tune(model, collator, examples, kind: str, work: str) -> dict:
    """`STEPS` Trainer steps; the losses before and after over the training set, and the logged ones."""
    before = evaluate(model, collator, examples, kind)
    start = time.perf_counter()
    trainer = Trainer(
        model=model, args=training_arguments(work), train_dataset=examples, data_collator=collator
    )
    trainer.train()
    seconds = time.perf_counter() - start
    logged = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return {
        "before": before,
        "after": evaluate(model, collator, examples, kind),
        "logged": logged,
        "seconds": seconds,
        "problem_type": model.config.problem_type,
    }


def fresh_head(auto_class, export: str, **config):
    transformers.set_seed(0)
    return auto_class.from_pretrained(export, trust_remote_code=True, **config)


def head_start(model, export: str) -> dict:
    """Whether a head loaded from an export holds its encoder and starts its own layers as `_init_weights`."""
    encoder = AutoModel.from_pretrained(export, trust_remote_code=True).state_dict()
    loaded = model.masked_elmo.state_dict()
    return {
        "encoder_loaded": loaded.keys() == encoder.keys()
        and all(torch.equal(loaded[name], encoder[name]) for name in encoder),
        "mix_weights": model.scalar_mix.weights.tolist(),
        "scale": model.scalar_mix.scale.tolist(),
        "classifier_bias": model.classifier.bias.tolist(),
        "classifier_std": float(model.classifier.weight.std()),
    }


def reload_difference(model, tokenizer, auto_class, texts, work: str) -> dict:
    """save_pretrained + from_pretrained: the same weights? the largest logit difference, the labels."""
    model.save_pretrained(work)
    tokenizer.save_pretrained(work)
    again = auto_class.from_pretrained(work, trust_remote_code=True).eval()
    saved, loaded = model.state_dict(), again.state_dict()
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    model.eval()
    with torch.no_grad():
        difference = float((model(**batch).logits - again(**batch).logits).abs().max())
    return {
        "weights_equal": saved.keys() == loaded.keys()
        and all(torch.equal(saved[name], loaded[name]) for name in saved),
        "max_difference": difference,
        "id2label": {str(index): label for index, label in again.config.id2label.items()},
        "problem_type": again.config.problem_type,
    }


def sequence_heads(export: str, tokenizer, work: str) -> dict:
    collator = DataCollatorWithPadding(tokenizer)
    labels = {index: animal for index, animal in enumerate(ANIMALS)}
    single = [{**tokenizer(sentence(i)), "labels": i % 3} for i in range(12)]
    model = fresh_head(
        AutoModelForSequenceClassification,
        export,
        num_labels=3,
        id2label=labels,
        label2id={animal: index for index, animal in labels.items()},
    )
    result = {"start": head_start(model, export)}
    # One optimizer step over 2 x BATCH examples, accumulated: Trainer logs the loss of the untrained model.
    accumulated = Trainer(
        model=model,
        args=training_arguments(work, max_steps=1, gradient_accumulation_steps=2, learning_rate=0.0),
        train_dataset=single[: 2 * BATCH],
        data_collator=collator,
    )
    accumulated.train()
    result["accumulation"] = {
        "logged": [entry["loss"] for entry in accumulated.state.log_history if "loss" in entry],
        "expected": evaluate(model, collator, single[: 2 * BATCH], "single_label_classification"),
    }
    result["single_label"] = fine_tune(model, collator, single, "single_label_classification", work)
    with tempfile.TemporaryDirectory() as saved:
        result["reload"] = reload_difference(
            model, tokenizer, AutoModelForSequenceClassification, [sentence(1), sentence(5)], saved
        )
        result["pipeline"] = text_classification(saved, model, tokenizer)

    # STS-B-like regression on pairs ([CLS] a [SEP] b [SEP]): 5 when the pair mentions a cat, else 1.
    pairs = [(sentence(i), f"It saw a {ANIMALS[(i * 2) % 3]}.") for i in range(12)]
    regression = [{**tokenizer(a, b), "labels": 5.0 if "cat" in a + b else 1.0} for a, b in pairs]
    model = fresh_head(AutoModelForSequenceClassification, export, num_labels=1)
    result["regression"] = fine_tune(model, collator, regression, "regression", work)

    # Multi-label: which animals a sentence names, as float multi-hot labels.
    animal_pairs = list(itertools.permutations(ANIMALS, 2)) * 2
    multi = [
        {
            **tokenizer(f"The {first} and the {second} {VERBS[i % 4]} near the {PLACES[i % 4]}."),
            "labels": [float(animal in (first, second)) for animal in ANIMALS],
        }
        for i, (first, second) in enumerate(animal_pairs)
    ]
    model = fresh_head(AutoModelForSequenceClassification, export, num_labels=3)
    result["multi_label"] = fine_tune(model, collator, multi, "multi_label_classification", work)
    return result


@contextlib.contextmanager
def unsupported_model_errors():
    """Collects the pipelines' "The model '...' is not supported for ..." errors logged meanwhile."""
    errors = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = lambda record: errors.append(record.getMessage())
    # transformers' loggers propagate up to the library's own, which does not propagate further.
    library_logger = logging.getLogger("transformers")
    library_logger.addHandler(handler)
    try:
        yield errors
    finally:
        library_logger.removeHandler(handler)
    errors[:] = [error for error in errors if "is not supported for" in error]


def text_classification(saved: str, model, tokenizer) -> dict:
    """The pipeline's answers on a sentence and a pair, and what the model gives on the same encodings."""
    with unsupported_model_errors() as unsupported:
        classify = pipeline("text-classification", model=saved, trust_remote_code=True)
    first, second = "The dog eats near the river.", "It saw a fish."
    answers = [classify(first)[0], classify({"text": first, "text_pair": second})]
    pair = tokenizer(first, second)["input_ids"]
    expected = []
    with torch.no_grad():
        for encoding in (
            tokenizer(first, return_tensors="pt"),
            tokenizer(first, second, return_tensors="pt"),
        ):
            probabilities = model(**encoding).logits.softmax(-1)[0]
            expected.append(
                {
                    "label": model.config.id2label[int(probabilities.argmax())],
                    "score": float(probabilities.max()),
                }
            )
    pieces = [tokenizer.cls_token_id, *tokenizer(first, add_special_tokens=False)["input_ids"]]
    pieces += [tokenizer.sep_token_id, *tokenizer(second, add_special_tokens=False)["input_ids"]]
    return {
        "answers": answers,
        "expected": expected,
        "pair_is_cls_a_sep_b_sep": pair == [*pieces, tokenizer.sep_token_id],
        "unsupported_errors": unsupported,
    }


def tagged(index: int):
    """A sentence as words and tags: a name (several word-pieces), an animal and a place."""
    name, animal, place = NAMES[index % 4], ANIMALS[index % 3], PLACES[(index + 1) % 4]
    words = [name, "saw", "the", animal, "near", "the", place, "."]
    return words, [3, 0, 0, 1, 0, 0, 2, 0]


def align(tokenizer, words, tags) -> dict:
    """transformers' run_ner.py alignment: a word's tag on its first word-piece, -100 elsewhere."""
    encoding = tokenizer(words, is_split_into_words=True)
    word_ids = encoding.word_ids()
    labels = [
        -100 if word is None or word == previous else tags[word]
        for previous, word in zip([None, *word_ids], word_ids)
    ]
    return {**encoding, "labels": labels}


def token_head(export: str, tokenizer, work: str) -> dict:
    collator = DataCollatorForTokenClassification(tokenizer)
    examples = [align(tokenizer, *tagged(index)) for index in range(12)]
    model = fresh_head(
        AutoModelForTokenClassification,
        export,
        num_labels=len(TAGS),
        id2label=TAGS,
        label2id={tag: index for index, tag in TAGS.items()},
    )
    result = {"start": head_start(model, export), "pieces": tokenizer.tokenize(NAMES[0])}
    result["training"] = fine_tune(model, collator, examples, "token_classification", work)
    words, tags = tagged(5)
    text = " ".join(words[:-1]) + "."
    result["unsupported_errors"] = []
    with tempfile.TemporaryDirectory() as saved:
        result["reload"] = reload_difference(model, tokenizer, AutoModelForTokenClassification, [text], saved)
        for strategy in ("simple", "first"):
            with unsupported_model_errors() as unsupported:
                tagger = pipeline(
                    "token-classification", model=saved, trust_remote_code=True, aggregation_strategy=strategy
                )
            result["unsupported_errors"] += unsupported
            groups = tagger(text)
            result[strategy] = [
                {"entity_group": group["entity_group"], "word": group["word"]} for group in groups
            ]
    result["expected_groups"] = [
        {"entity_group": TAGS[tag].removeprefix("B-"), "word": word} for word, tag in zip(words, tags) if tag
    ]
    return result


def main(request_file: str, output_file: str) -> None:
    with open(request_file) as request_json:
        export = json.load(request_json)["export"]
    tokenizer = AutoTokenizer.from_pretrained(export, trust_remote_code=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        result = {
            "transformers_version": transformers.__version__,
            "steps": STEPS,
            "fast_tokenizer": tokenizer.is_fast,
            "sequence": sequence_heads(export, tokenizer, work),
            "token": token_head(export, tokenizer, work),
        }
    result["seconds"] = time.perf_counter() - start
    with open(output_file, "w") as output:
        json.dump(result, output)


if __name__ == "__main__":
    main(*sys.argv[1:])
