"""A corpus prepared once into a token store reads as the text does, and refuses a reader it does not fit."""
import hashlib
import json
import os

import numpy as np
import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader

from maelmo_plugin.data.data_loaders.btbptt import BtbpttDataLoader
from maelmo_plugin.data.token_store import TokenStore, is_store
from tests import FIXTURES_ROOT, PROJECT_ROOT, run_allennlp

CORPUS = str(FIXTURES_ROOT / "lm" / "corpus.txt")
VOCAB = str(FIXTURES_ROOT / "lm" / "vocab.txt")


def reader(vocab=VOCAB):
    tokenizer = {"type": "maelmo_wordpiece", "vocab": vocab}
    params = {"type": "maelmo_mlm_corpus", "tokenizer": tokenizer, "sequence_length": 4}
    return DatasetReader.from_params(Params(params))


def epochs(data_path, count=2):
    loader = BtbpttDataLoader(reader(), data_path, batch_size=2, quiet=True)
    def batches():
        return [(b["tokens"]["tokens"]["tokens"].tolist(), b["window_keys"].tolist()) for b in loader]

    return [batches() for _ in range(count)]


def test_a_store_gives_the_batches_of_its_text(tmp_path):
    store = TokenStore.prepare(reader(), CORPUS, str(tmp_path / "store"), quiet=True)
    assert is_store(store.directory) and not is_store(CORPUS)
    assert epochs(store.directory) == epochs(CORPUS)  # two epochs: the shuffled document orders too
    manifest = json.loads((tmp_path / "store" / "manifest.json").read_text())
    content = open(CORPUS, "rb").read()
    digest = hashlib.sha256(content).hexdigest()
    assert manifest["corpus"] == [{"path": os.path.abspath(CORPUS), "bytes": len(content), "sha256": digest}]
    assert manifest["dtype"] == "uint16" and manifest["reader"]["vocabulary"] == VOCAB
    ids = np.fromfile(tmp_path / "store" / "ids.bin", dtype=np.uint16)
    assert len(ids) == manifest["num_tokens"] == store.num_tokens
    expected = [piece for _, piece_ids in reader().paragraphs_by_document(CORPUS) for piece in piece_ids]
    assert ids.tolist() == expected
    assert store.offsets.tolist()[0] == 0 and store.num_documents == manifest["num_documents"] == 3


def test_a_store_of_another_vocabulary_is_refused(tmp_path):
    store = TokenStore.prepare(reader(), CORPUS, str(tmp_path / "store"), quiet=True)
    sample_vocab = str(PROJECT_ROOT / "maelmo_plugin" / "data" / "sample" / "vocab.txt")
    loader = BtbpttDataLoader(reader(sample_vocab), store.directory, batch_size=2, quiet=True)
    with pytest.raises(ConfigurationError, match="vocabulary_sha256: the store has '[0-9a-f]+', the config"):
        list(loader)


def test_a_store_is_written_whole_or_not_at_all(tmp_path):
    TokenStore.prepare(reader(), CORPUS, str(tmp_path / "store"), quiet=True)
    with pytest.raises(ConfigurationError, match="exists; give --force"):
        TokenStore.prepare(reader(), CORPUS, str(tmp_path / "store"), quiet=True)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(ConfigurationError, match="contains no text"):
        TokenStore.prepare(reader(), str(empty), str(tmp_path / "other"), quiet=True)
    assert sorted(os.listdir(tmp_path)) == ["empty.txt", "store"]  # no half-written store left behind


def test_the_command_prepares_a_store(tmp_path):
    output = tmp_path / "store"
    result = run_allennlp(["maelmo-prepare", CORPUS, "--vocab", VOCAB, "--output-dir", str(output)], {})
    assert "3 documents" in result.stdout and is_store(output)
    arguments = ["maelmo-prepare", CORPUS, "--vocab", VOCAB, "--output-dir", str(output)]
    failed = run_allennlp(arguments, {}, check=False)
    assert failed.returncode == 2 and "exists; give --force" in failed.stderr


def test_a_store_whose_corpus_changed_is_refused_and_one_without_its_corpus_is_not(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(open(CORPUS, "rb").read())
    store = TokenStore.prepare(reader(), str(corpus), str(tmp_path / "store"), quiet=True)
    with open(corpus, "a", encoding="utf-8") as text:
        text.write("A paragraph added after preparing.\n")
    size = corpus.stat().st_size
    message = f"corpus.txt \\({size - 35} bytes when prepared, {size} now\\)"
    with pytest.raises(ConfigurationError, match=message):
        epochs(store.directory, count=1)
    corpus.unlink()  # a store moved to another machine, without its text
    assert epochs(store.directory, count=1)
