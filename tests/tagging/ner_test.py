"""
training_config/tagging/ner.jsonnet (allennlp-models' ELMo NER recipe with Masked ELMo in ELMo's place),
trained on a CoNLL-2003-format fixture; its archive tags raw sentences with `allennlp predict`, on its own.
"""

import json
import os

import allennlp_models.tagging  # noqa: F401  registers crf_tagger, as the allennlp command does (a default plugin)
import pytest
from allennlp.commands.train import TrainModel
from allennlp.common import Params
from allennlp.common.util import prepare_environment
from allennlp.models.archival import CONFIG_NAME, archive_model, load_archive
from allennlp.training.util import evaluate

from tests import FIXTURES_ROOT, PROJECT_ROOT, run_allennlp, variant_config

CONFIG = str(PROJECT_ROOT / "training_config" / "tagging" / "ner.jsonnet")
CONLL = str(FIXTURES_ROOT / "tagging" / "conll2003.txt")
# 48 sentences make 6 batches of 8, and a learning rate of 0.01 lets the tagger learn them in 10 epochs (the
# recipe's 1e-3 and batches of 64 are for CoNLL-2003's 14,041 sentences).
OVERRIDES = {
    "data_loader.batch_size": 8,
    "trainer.optimizer.lr": 0.01,
    "trainer.num_epochs": 10,
}


def fixture_config(directory) -> str:
    """ner.jsonnet for the fixture Masked ELMo (d = 16): the two-line variant file a user writes."""
    return variant_config(directory, CONFIG, settings={"lm_dim": 16})


def ner_environment(archive: str) -> dict:
    return {
        "MAELMO_LM_ARCHIVE": archive,
        "MAELMO_VOCAB": str(FIXTURES_ROOT / "lm" / "vocab.txt"),
        "MAELMO_NER_TRAIN": CONLL,
        "MAELMO_NER_VALIDATION": CONLL,
        "MAELMO_GLOVE": "",
    }


@pytest.fixture(scope="module")
def trained(masked_elmo_archive, tmp_path_factory):
    """(span F1 before training, the training metrics, the archive), as `allennlp train` would make them."""
    serialization_dir = str(tmp_path_factory.mktemp("ner"))
    with pytest.MonkeyPatch.context() as patch:
        for name, value in ner_environment(masked_elmo_archive).items():
            patch.setenv(name, value)
        params = Params.from_file(fixture_config(serialization_dir), params_overrides=OVERRIDES)
        params.to_file(os.path.join(serialization_dir, CONFIG_NAME))  # the steps of allennlp train
        include_in_archive = params.pop("include_in_archive")
        prepare_environment(params)
        train_loop = TrainModel.from_params(params=params, serialization_dir=serialization_dir, local_rank=0)
    validation = train_loop.trainer._validation_data_loader
    before = evaluate(train_loop.model, validation, cuda_device=-1)["f1-measure-overall"]
    metrics = train_loop.run()
    train_loop.finish(metrics)
    archive_model(serialization_dir, include_in_archive=include_in_archive)
    return before, metrics, serialization_dir + "/model.tar.gz"


def test_span_f1_rises_with_training(trained):
    before, metrics, _ = trained
    after = metrics["best_validation_f1-measure-overall"]
    print(f"span F1 on the fixture: {before:.3f} before training, {after:.3f} after")
    assert before < 0.2 and after > 0.9


def test_the_archive_tags_raw_sentences_on_its_own(trained, tmp_path):
    _, _, archive = trained
    inputs = tmp_path / "sentences.jsonl"
    lines = [
        {"sentence": "Paul works for Reuters in New York."},
        {"tokens": ["Mary", "lives", "in", "Berlin", "."]},
    ]
    inputs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    output = tmp_path / "tags.jsonl"
    # Neither the language model nor its vocabulary is needed: the archive holds its copies.
    missing = {"MAELMO_LM_ARCHIVE": str(tmp_path / "gone.tar.gz"), "MAELMO_VOCAB": str(tmp_path / "gone.txt")}
    run_allennlp(
        [
            "predict",
            archive,
            str(inputs),
            "--predictor",
            "maelmo_sentence_tagger",
            "--silent",
            "--output-file",
            str(output),
            "--include-package",
            "maelmo_plugin",
        ],
        missing,
        cwd=tmp_path,
    )
    first, second = [json.loads(line) for line in output.read_text().splitlines()]
    assert first["words"] == ["Paul", "works", "for", "Reuters", "in", "New", "York", "."]
    assert len(first["tags"]) == len(first["words"])
    assert [(span["label"], span["text"]) for span in first["spans"]] == [
        ("PER", "Paul"),
        ("ORG", "Reuters"),
        ("LOC", "New York"),
    ]
    assert second["words"] == lines[1]["tokens"]
    spans = [(span["label"], span["start"], span["end"]) for span in second["spans"]]
    assert spans == [("PER", 0, 0), ("LOC", 3, 3)]


def test_an_input_without_words_names_the_keys_it_needs(trained):
    from allennlp.predictors import Predictor

    predictor = Predictor.from_archive(load_archive(trained[2]), "maelmo_sentence_tagger")
    assert predictor.predict("Mary lives in Berlin.")["words"] == ["Mary", "lives", "in", "Berlin", "."]
    with pytest.raises(KeyError, match='"sentence" \\(a string\\) or "tokens"'):
        predictor.predict_json({"text": "Mary lives in Berlin."})


def test_characters_have_their_own_vocabulary(masked_elmo_archive, tmp_path, monkeypatch):
    """
    Two words with more distinct characters (26) than the word vocabulary has entries (2 + padding and OOV):
    the character embedding must be sized by the characters' namespace, not by the words'.
    """
    conll = tmp_path / "few_words.txt"
    sentence = "abcdefghijklm NNP I-NP I-PER\nnopqrstuvwxyz NN O O\n"
    conll.write_text("-DOCSTART- -X- -X- O\n\n" + (sentence + "\n") * 4)
    environment = {
        **ner_environment(masked_elmo_archive),
        "MAELMO_NER_TRAIN": str(conll),
        "MAELMO_NER_VALIDATION": str(conll),
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    params = Params.from_file(
        fixture_config(tmp_path), params_overrides={**OVERRIDES, "trainer.num_epochs": 1}
    )
    params.pop("include_in_archive")
    prepare_environment(params)
    train_loop = TrainModel.from_params(params=params, serialization_dir=str(tmp_path / "run"), local_rank=0)
    vocab = train_loop.model.vocab
    assert vocab.get_vocab_size("tokens") < vocab.get_vocab_size("token_characters")
    embedder = train_loop.model.text_field_embedder.token_embedder_token_characters
    assert embedder._embedding._module.weight.size(0) == vocab.get_vocab_size("token_characters")
    assert train_loop.run()["training_loss"] > 0
