"""A corpus prepared once into a token store reads as the text does, and refuses a reader it does not fit."""

import hashlib
import json
import os
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader
from allennlp.data.tokenizers.sentence_splitter import SentenceSplitter

from maelmo_declarations.refusals import Refusal
from maelmo_declarations.shards import Shard
from maelmo_plugin.lm.data_loaders.btbptt import BtbpttDataLoader
from maelmo_plugin.lm.dataset_readers import corpus_files
from maelmo_plugin.lm.dataset_readers.token_store import TokenStore, is_store
from tests import FIXTURES_ROOT, PROJECT_ROOT, file_tree, run_allennlp
from tests.common.text_files_test import VARIANTS, write_compressed

CORPUS = str(FIXTURES_ROOT / "lm" / "corpus.txt")
VOCAB = str(FIXTURES_ROOT / "lm" / "vocab.txt")


def reader(vocab=VOCAB, **options):
    tokenizer = {"type": "maelmo_wordpiece", "vocab": vocab}
    return DatasetReader.from_params(Params({"type": "maelmo_mlm_corpus", "tokenizer": tokenizer, **options}))


def epochs(data_path, count=2, cache=None, **options):
    loader = BtbpttDataLoader(
        reader(), data_path, batch_size=2, sequence_length=4, cache_directory=cache, quiet=True, **options
    )

    def batches():
        return [(b["tokens"]["tokens"]["tokens"].tolist(), b["window_keys"].tolist()) for b in loader]

    return [batches() for _ in range(count)]


def test_a_store_gives_the_batches_of_its_text(tmp_path):
    store = TokenStore.prepare(reader(), CORPUS, str(tmp_path / "store"), quiet=True)
    assert is_store(store.directory) and not is_store(CORPUS)
    # Two epochs, so the shuffled document orders too; the text is tokenized into a cache of its own.
    assert epochs(store.directory) == epochs(CORPUS, cache=str(tmp_path / "cache"))
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
    sample_vocab = str(PROJECT_ROOT / "training_config" / "lm" / "sample" / "vocab.txt")
    loader = BtbpttDataLoader(reader(sample_vocab), store.directory, batch_size=2, quiet=True)
    with pytest.raises(
        ConfigurationError,
        match="vocabulary_sha256: the store has '[0-9a-f]+', the config.*"
        "maelmo-prepare .*corpus.txt --vocab .* --force`, or set the data loader's `rebuild_store",
    ):
        list(loader)


def test_a_store_is_written_whole_or_not_at_all(tmp_path):
    TokenStore.prepare(reader(), CORPUS, str(tmp_path / "store"), quiet=True)
    with pytest.raises(Refusal, match="holds a previous output of maelmo-prepare.*--force"):
        TokenStore.prepare(reader(), CORPUS, str(tmp_path / "store"), quiet=True)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(ConfigurationError, match="contains no text"):
        TokenStore.prepare(reader(), str(empty), str(tmp_path / "other"), quiet=True)
    assert sorted(os.listdir(tmp_path)) == ["empty.txt", "store"]  # no half-written store left behind


def test_an_existing_store_survives_a_forced_run_that_fails_and_is_replaced_when_complete(tmp_path):
    store = tmp_path / "store"
    TokenStore.prepare(reader(), CORPUS, str(store), quiet=True)
    before = {name: (store / name).read_bytes() for name in os.listdir(store)}
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(ConfigurationError, match="contains no text"):
        TokenStore.prepare(reader(), str(empty), str(store), quiet=True, force=True)
    assert {name: (store / name).read_bytes() for name in os.listdir(store)} == before
    other = tmp_path / "other.txt"
    other.write_text("A cat sleeps.\n", encoding="utf-8")
    assert TokenStore.prepare(reader(), str(other), str(store), quiet=True, force=True).num_documents == 1
    assert sorted(os.listdir(tmp_path)) == ["empty.txt", "other.txt", "store"]


@pytest.mark.parametrize("block_bytes", [1 << 20, 30])
def test_two_processes_write_the_store_one_writes(tmp_path, monkeypatch, block_bytes):
    monkeypatch.setattr(corpus_files, "BLOCK_BYTES", block_bytes)  # 30: blocks of a line or two
    one = TokenStore.prepare(reader(), CORPUS, str(tmp_path / "one"), quiet=True)
    two = TokenStore.prepare(reader(), CORPUS, str(tmp_path / "two"), quiet=True, processes=2)
    for name in ("ids.bin", "offsets.npy"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    assert one.manifest == two.manifest


# A corpus whose edges test where documents start: a byte-order mark alone on the first line, blank lines
# before and between documents, a document whose first line has no word-piece (it stays a document of its
# own), documents with nothing in them (left out of the store), a CRLF line end, a long document, no final
# line end.
EDGES = (
    "\ufeff\n\nThe cat sleeps. The dog ran.\n\n\n\x01\nThe dog ran.\n\n"
    + "\x02\n\nA fish.\r\nThe bird sees the cat.\n\n"
    + "".join(f"The fox ran {n}.\n" for n in range(12))
    + "\n\x03\n\nThe man eats"
)
# The sha256 of ids.bin and offsets.npy that format 1 has for these corpora: other bytes need a new FORMAT.
STORE_BYTES = {
    "corpus.txt": (
        "834a6abdc68f75639f0d7dab508ea8ecff3268d0581480b59ff883a025c7ff2d",
        "478761aeffe13fded496032ee5f47d2614965116ad0982a61f91b3cdde72197e",
    ),
    "edges.txt": (
        "aefbf6b6bf46fe66b0c9a9dea92419ec818ba0eda3729e8f0243879e209c458d",
        "7868aea7fe4cf7e6fc8f435a515a8022d516aef0ba33c04226568ba2bee8f8eb",
    ),
}


@pytest.mark.parametrize("block_bytes, processes", [(1 << 20, 1), (1, 1), (40, 2)])
def test_a_store_has_the_bytes_of_format_1(tmp_path, monkeypatch, block_bytes, processes):
    """Format 1's bytes whatever the blocks and the processes: stores of other versions read the same."""
    monkeypatch.setattr(corpus_files, "BLOCK_BYTES", block_bytes)
    edges = tmp_path / "edges.txt"
    edges.write_bytes(EDGES.encode("utf-8"))
    for path in (CORPUS, str(edges)):
        directory = tmp_path / f"store-{os.path.basename(path)}"
        store = TokenStore.prepare(reader(), path, str(directory), quiet=True, processes=processes)
        digests = tuple(
            hashlib.sha256((directory / name).read_bytes()).hexdigest() for name in ("ids.bin", "offsets.npy")
        )
        assert digests == STORE_BYTES[os.path.basename(path)]
    assert store.offsets.tolist() == [0, 11, 17, 30, 114, 119]


def test_preparing_holds_nothing_per_document(tmp_path, monkeypatch):
    """
    Python's allocations (tracemalloc, numpy's included) while a corpus of one-line documents is prepared:
    their peak must not grow with the number of documents (an index entry and an offset per document as
    Python objects cost about 350 bytes per document).
    """
    monkeypatch.setattr(corpus_files, "BLOCK_BYTES", 1 << 16)  # many blocks in both corpora
    whole_lines = reader()
    whole_lines._sentence_splitter = WholeParagraphs()  # the index is measured, not spaCy
    peaks = {}
    for documents in (20_000, 200_000):
        path = tmp_path / f"{documents}.txt"
        path.write_text("".join(f"The {('cat', 'dog', 'fox')[n % 3]} ran.\n\n" for n in range(documents)))
        tracemalloc.start()
        try:
            store = TokenStore.prepare(
                whole_lines, str(path), str(tmp_path / f"store{documents}"), quiet=True
            )
            peaks[documents] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert store.num_documents == documents
    per_document = (peaks[200_000] - peaks[20_000]) / 180_000
    assert per_document < 8, f"{per_document:.0f} bytes per document"


class WholeParagraphs(SentenceSplitter):
    def split_sentences(self, text):
        return [text]


def test_a_store_is_opened_memory_mapped_and_a_truncated_one_is_refused(tmp_path):
    store = TokenStore.prepare(reader(), CORPUS, str(tmp_path / "store"), quiet=True)
    assert isinstance(store.offsets, np.memmap) and store.offsets.dtype == np.int64
    ids = tmp_path / "store" / "ids.bin"
    ids.write_bytes(ids.read_bytes()[:-2])
    with pytest.raises(
        Refusal,
        match=r"store is not a whole token store: its manifest says 3 documents and 244 bytes of ids, its "
        r"files hold 3 and 242",
    ):
        TokenStore(store.directory)


def test_an_epoch_stream_reads_the_documents_in_order_across_their_edges(tmp_path):
    store = TokenStore.prepare(reader(), CORPUS, str(tmp_path / "store"), quiet=True)
    ids = store.ids()
    documents = [ids[store.offsets[d] : store.offsets[d + 1]] for d in range(store.num_documents)]
    order = [2, 0, 1]
    expected = np.concatenate([documents[d] for d in order])
    stream = store.stream(order)
    assert stream.length == len(expected) == store.num_tokens
    for start, stop in [(0, 5), (0, len(expected)), (len(documents[2]) - 3, len(documents[2]) + 4), (7, 7)]:
        np.testing.assert_array_equal(stream.read(start, stop), expected[start:stop])


def test_the_command_prepares_a_store(tmp_path):
    output = tmp_path / "store"
    result = run_allennlp(["maelmo-prepare", CORPUS, "--vocab", VOCAB, "--output-dir", str(output)], {})
    assert "3 documents" in result.stdout and is_store(output)
    arguments = ["maelmo-prepare", CORPUS, "--vocab", VOCAB, "--output-dir", str(output)]
    failed = run_allennlp(arguments, {}, check=False)
    assert failed.returncode == 2 and "holds a previous output of maelmo-prepare" in failed.stderr


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("output", ["thesis", "corpus_folder", "inside_corpus_folder"])
def test_force_never_replaces_a_folder_of_the_users_or_the_corpus(tmp_path, force, output):
    """`--force` once replaced a folder of the user's with a token store (issue 70): now refused, kept whole."""
    (tmp_path / "thesis" / "sub").mkdir(parents=True)
    (tmp_path / "thesis" / "thesis.txt").write_text("chapter one")
    (tmp_path / "thesis" / "sub" / "x.txt").write_text("notes")
    (tmp_path / "corpus_folder").mkdir()
    corpus = tmp_path / "corpus_folder" / "corpus.txt"
    corpus.write_bytes(open(CORPUS, "rb").read())
    target = tmp_path / output if output != "inside_corpus_folder" else tmp_path / "corpus_folder" / "store"
    message = {
        "thesis": "maelmo-prepare did not write",
        "corpus_folder": "is the input",
        "inside_corpus_folder": "lies inside the input",
    }[output]
    before = file_tree(tmp_path)
    with pytest.raises(Refusal, match=message):
        TokenStore.prepare(reader(), str(tmp_path / "corpus_folder"), str(target), quiet=True, force=force)
    assert file_tree(tmp_path) == before and sorted(os.listdir(tmp_path)) == ["corpus_folder", "thesis"]


def test_the_command_refuses_a_folder_of_the_users_before_reading_anything(tmp_path):
    import argparse

    from maelmo_declarations.commands import prepare
    from maelmo_declarations.refusals import Refusal

    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "thesis.txt").write_text("chapter one")
    args = argparse.Namespace(
        corpus=[CORPUS], vocab=VOCAB, output_dir=str(tmp_path / "thesis"), force=True, processes=1
    )
    with pytest.raises(Refusal, match="maelmo-prepare did not write.*remove it yourself"):
        prepare.check(args)
    args.output_dir = os.path.dirname(CORPUS)
    with pytest.raises(Refusal, match="holds the input"):
        prepare.check(args)
    assert os.listdir(tmp_path / "thesis") == ["thesis.txt"]


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
    # Asked to, the run prepares it again from the manifest's files, with the reader's settings.
    rebuilt = epochs(store.directory, count=1, rebuild_store=True)
    assert TokenStore(store.directory).num_tokens > store.num_tokens
    assert epochs(store.directory, count=1) == rebuilt
    corpus.unlink()  # a store moved to another machine, without its text
    assert epochs(store.directory, count=1)


@pytest.mark.parametrize("kind, name", VARIANTS[1:])
def test_a_compressed_corpus_prepares_the_store_of_its_text(tmp_path, monkeypatch, kind, name):
    monkeypatch.setattr(corpus_files, "BLOCK_BYTES", 30)  # many blocks: each worker reads forward across them
    compressed = write_compressed(tmp_path / name, Path(CORPUS).read_text(encoding="utf-8"), kind)
    plain = TokenStore.prepare(reader(), CORPUS, str(tmp_path / "plain"), quiet=True)
    for processes in (1, 2):
        directory = str(tmp_path / f"store{processes}")
        store = TokenStore.prepare(reader(), str(compressed), directory, quiet=True, processes=processes)
        assert store.ids().tolist() == plain.ids().tolist()
        assert store.offsets.tolist() == plain.offsets.tolist()
        assert store.manifest["corpus"][0]["bytes"] == compressed.stat().st_size


@pytest.mark.slow  # the plain-file case above runs in the default suite; CI runs this one
def test_the_command_prepares_a_store_from_a_directory_of_compressed_files(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    lines = Path(CORPUS).read_text(encoding="utf-8").split("\n\n")
    write_compressed(corpus / "1.txt.xz", lines[0] + "\n", "xz")
    write_compressed(corpus / "2.txt.bz2", "\n\n".join(lines[1:]), "bzip2")
    store = str(tmp_path / "store")
    result = run_allennlp(
        ["maelmo-prepare", str(corpus), "--vocab", VOCAB, "--output-dir", store, "--processes", "2"], {}
    )
    assert "3 documents" in result.stdout
    plain = TokenStore.prepare(reader(), CORPUS, str(tmp_path / "plain"), quiet=True)
    assert TokenStore(str(tmp_path / "store")).ids().tolist() == plain.ids().tolist()
    bad = write_compressed(tmp_path / "bad.txt.gz", "The cat.\nThe caf\xe9.\n", "gzip", "latin-1")
    arguments = ["maelmo-prepare", str(bad), "--vocab", VOCAB, "--output-dir", str(tmp_path / "bad")]
    failed = run_allennlp(arguments, {}, check=False)
    assert failed.returncode == 2 and "bad.txt.gz, line 2: not valid UTF-8" in failed.stderr


@pytest.mark.parametrize("shard", [None, "0/2", "1/2"])
def test_a_store_or_part_counts_and_logs_the_lines_it_skips(tmp_path, caplog, shard):
    """A store of a reader that skips lines that are not UTF-8 says how many it skipped, as a read does."""
    corpus = tmp_path / "latin1.txt"
    corpus.write_bytes(b"The cat ran.\n\xff\xfe\nThe caf\xe9 is old.\n\nThe dog ran.\n" * 50)
    skipping = reader(skip_undecodable_lines=True)
    with caplog.at_level("INFO"):
        if shard is None:
            TokenStore.prepare(skipping, str(corpus), str(tmp_path / "store"), quiet=True)
        else:
            TokenStore.prepare_part(
                skipping, str(corpus), str(tmp_path / "part"), Shard.parse(shard), quiet=True
            )
    assert (
        f"Skipped {100 if shard is None else 50} line(s) that are not valid UTF-8 ({corpus}: " in caplog.text
    )
