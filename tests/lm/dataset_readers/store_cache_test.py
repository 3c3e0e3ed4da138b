"""A text corpus is tokenized once into the cache, by one process, and a changed file gets a store of its own."""

import multiprocessing
import os
import shutil
import time

import pytest

from maelmo_plugin.lm.dataset_readers import store_cache
from maelmo_plugin.lm.dataset_readers.token_store import TokenStore
from tests import FIXTURES_ROOT
from tests.common.text_files_test import write_compressed
from tests.lm.dataset_readers.token_store_test import reader


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    shutil.copy(FIXTURES_ROOT / "lm" / "corpus.txt", path)
    return path


@pytest.fixture
def preparations(monkeypatch, tmp_path):
    """Records each `TokenStore.prepare` as a file (so that forked processes count too), slowly."""
    record = tmp_path / "preparations"
    record.mkdir()
    original = TokenStore.prepare.__func__

    def prepare(cls, reader, corpus, directory, **options):
        (record / f"{os.getpid()}-{time.monotonic_ns()}").touch()
        time.sleep(0.3)  # long enough for a second process to arrive while the first writes
        return original(cls, reader, corpus, directory, **options)

    monkeypatch.setattr(TokenStore, "prepare", classmethod(prepare))
    return record


def _open(corpus, cache):
    return store_cache.open_corpus(reader(), str(corpus), str(cache), rebuild=False, quiet=True).directory


def test_a_text_corpus_is_tokenized_once_and_reused(corpus, preparations, tmp_path):
    cache = tmp_path / "cache"
    first = _open(corpus, cache)
    assert _open(corpus, cache) == first and len(os.listdir(preparations)) == 1
    assert os.path.dirname(first) == str(cache) and os.path.basename(first).startswith("corpus.txt-")
    expected = [piece for _, ids in reader().paragraphs_by_document(str(corpus)) for piece in ids]
    assert TokenStore(first).ids().tolist() == expected


def test_a_changed_corpus_gets_a_new_store(corpus, preparations, tmp_path):
    cache = tmp_path / "cache"
    first = _open(corpus, cache)
    with open(corpus, "a", encoding="utf-8") as out:
        out.write("\nA new paragraph at the end.\n")
    second = _open(corpus, cache)
    assert second != first and len(os.listdir(preparations)) == 2
    assert TokenStore(second).num_tokens > TokenStore(first).num_tokens


def test_processes_that_start_together_tokenize_once(corpus, preparations, tmp_path):
    """The workers of a distributed run: the first takes the lock and tokenizes, the others wait and read it."""
    cache = tmp_path / "cache"
    context = multiprocessing.get_context("fork")
    with context.Pool(3) as pool:
        directories = pool.starmap(_open, [(corpus, cache)] * 3)
    assert len(set(directories)) == 1 and len(os.listdir(preparations)) == 1
    assert TokenStore(directories[0]).num_tokens > 0


def test_the_default_cache_is_in_allennlps_cache_root(monkeypatch, tmp_path):
    from allennlp.common import file_utils

    monkeypatch.setattr(file_utils, "CACHE_ROOT", tmp_path)
    assert store_cache.default_cache_directory() == str(tmp_path / "maelmo_token_stores")


def test_a_compressed_corpus_is_keyed_by_its_file_and_a_change_gets_a_new_store(preparations, tmp_path):
    text = (FIXTURES_ROOT / "lm" / "corpus.txt").read_text(encoding="utf-8")
    corpus = write_compressed(tmp_path / "corpus.txt.gz", text, "gzip")
    cache = tmp_path / "cache"
    first = _open(corpus, cache)
    assert _open(corpus, cache) == first and os.path.basename(first).startswith("corpus.txt.gz-")
    plain = str(FIXTURES_ROOT / "lm" / "corpus.txt")
    expected = [piece for _, ids in reader().paragraphs_by_document(plain) for piece in ids]
    assert TokenStore(first).ids().tolist() == expected
    write_compressed(corpus, text + "\nA new paragraph at the end.\n", "gzip")
    second = _open(corpus, cache)
    assert second != first and len(os.listdir(preparations)) == 2
