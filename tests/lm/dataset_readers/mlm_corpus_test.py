import logging
from collections import Counter

import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers import DatasetReader
from allennlp.data.dataset_readers.dataset_reader import DistributedInfo, WorkerInfo
from allennlp.data.tokenizers import WhitespaceTokenizer
from allennlp.data.tokenizers.sentence_splitter import SpacySentenceSplitter

from maelmo_plugin.common.wordpiece import WordpieceTokenizer, WordpieceVocabulary
from maelmo_plugin.lm.dataset_readers import corpus_files, mlm_corpus
from maelmo_plugin.lm.dataset_readers.mlm_corpus import MlmCorpusReader
from tests import FIXTURES_ROOT
from tests.common.text_files_test import VARIANTS, write_compressed

VOCAB = str(FIXTURES_ROOT / "lm" / "vocab.txt")
CORPUS = FIXTURES_ROOT / "lm" / "corpus.txt"
LOGGER = "maelmo_plugin.lm.dataset_readers.mlm_corpus"

# Six documents of two paragraphs each; both paragraphs of a document name the same animal, so a
# document can be recognised (and its contiguity checked) in the word-piece stream.
ANIMALS = ["cat", "dog", "fox", "bird", "fish", "man"]
SHUFFLE_CORPUS = "\n\n".join(f"The {a} sleeps. The {a} ran.\nA {a} eats the fish." for a in ANIMALS) + "\n"


def make_reader(**kwargs) -> MlmCorpusReader:
    return MlmCorpusReader(WordpieceTokenizer(VOCAB), **kwargs)


def spaced(pieces: str) -> list[str]:
    """Expected word-pieces written with spaces between them, to keep expectations readable."""
    return pieces.split(" ")


def texts(instances) -> list[list[str]]:
    return [[token.text for token in instance["tokens"].tokens] for instance in instances]


def stream(instances) -> list[str]:
    return [piece for window in texts(instances) for piece in window]


def paragraphs(pieces: list[str]) -> list[list[str]]:
    """Splits a stream at each [CLS]: every paragraph starts with one."""
    result: list[list[str]] = []
    for piece in pieces:
        if piece == "[CLS]":
            result.append([])
        result[-1].append(piece)
    return result


def documents(pieces: list[str]) -> list[tuple]:
    """The SHUFFLE_CORPUS documents in stream order, asserting that each one's paragraphs are adjacent."""
    pairs = paragraphs(pieces)
    assert len(pairs) % 2 == 0
    result = []
    for first, second in zip(pairs[::2], pairs[1::2]):
        assert first[2] == second[2], f"paragraphs of different documents are adjacent: {first} {second}"
        result.append(tuple(first + second))
    return result


@pytest.fixture
def shuffle_corpus(tmp_path):
    path = tmp_path / "animals.txt"
    path.write_text(SHUFFLE_CORPUS, encoding="utf-8")
    return str(path)


def test_read_gives_each_paragraph_with_cls_first_and_each_sentence_closed_by_sep():
    instances = texts(make_reader().read(str(CORPUS)))
    assert instances[0] == spaced(
        "[CLS] The quick brown fox jumps over the lazy dog . [SEP] The dog sleeps . [SEP]"
    )
    assert instances[1][:2] == ["[CLS]", "The"]


def test_a_byte_order_mark_reads_as_the_text_without_it(tmp_path):
    with_bom = tmp_path / "bom.txt"
    with_bom.write_bytes(b"\xef\xbb\xbf" + CORPUS.read_bytes())
    assert texts(make_reader().read(str(with_bom))) == texts(make_reader().read(str(CORPUS)))


def test_read_lays_out_every_paragraph_as_text_to_instance_does_in_corpus_order():
    reader = make_reader()
    with open(CORPUS, encoding="utf-8") as lines:
        expected = [texts([reader.text_to_instance(line)])[0] for line in lines if line.strip()]
    assert texts(reader.read(str(CORPUS))) == expected
    assert [ids for _, ids in reader.paragraphs_by_document(str(CORPUS))] == [
        [token.text_id for token in instance["tokens"].tokens] for instance in reader.read(str(CORPUS))
    ]


def test_text_to_instance_lays_out_one_paragraph_and_indexes_with_the_wordpiece_ids():
    reader = make_reader()
    instance = reader.text_to_instance("  The cat sleeps. The dog ran!\n")
    assert texts([instance])[0] == spaced("[CLS] The cat sleeps . [SEP] The dog ran ! [SEP]")
    reader.apply_token_indexers(instance)
    instance.index_fields(WordpieceVocabulary.from_wordpiece_vocab(VOCAB))
    tensors = instance.as_tensor_dict()
    assert tensors.keys() == {"tokens"}
    assert tensors["tokens"]["tokens"]["tokens"].tolist() == [t.text_id for t in instance["tokens"].tokens]
    with pytest.raises(ValueError, match="no word-pieces"):
        reader.text_to_instance("   ")


def test_glob_and_comma_separated_paths_are_read_in_sorted_order(tmp_path):
    (tmp_path / "b.txt").write_text("The dog ran.\n", encoding="utf-8")
    (tmp_path / "a.txt").write_text("The cat ran.\n", encoding="utf-8")
    expected = spaced("[CLS] The cat ran . [SEP] [CLS] The dog ran . [SEP]")
    reader = make_reader()
    assert stream(reader.read(str(tmp_path / "*.txt"))) == expected
    assert stream(reader.read(f"{tmp_path / 'a.txt'}, {tmp_path / 'b.txt'}")) == expected


WIKI = " = A = \n\n The cat ran . \n\n = = B = = \n\n The cat ate . \n\n = C = \n\n The dog ran . \n"
WIKI_TITLE = r"^ = [^=].* = $"
ARTICLE_A = ["A", "cat", "[UNK]", "cat"]  # the third piece of each paragraph; "=" is [UNK] in the tiny vocab
ARTICLE_C = ["C", "dog"]


def third_pieces(instances) -> list[str]:
    return [paragraph[2] for paragraph in paragraphs(stream(instances))]


def test_document_start_pattern_groups_sections_and_ignores_blank_lines(tmp_path, caplog):
    path = tmp_path / "wiki.txt"
    path.write_text(WIKI, encoding="utf-8")
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert (
            third_pieces(make_reader(document_start_pattern=WIKI_TITLE).read(str(path)))
            == ARTICLE_A + ARTICLE_C
        )
        assert "1 file(s): 2 documents, 6 paragraphs" in caplog.text
        list(make_reader().read(str(path)))  # without the pattern, every blank line ends a document
        assert "1 file(s): 6 documents, 6 paragraphs" in caplog.text


@pytest.mark.parametrize("num_workers, world_size", [(2, None), (2, 2)])
def test_workers_read_disjoint_documents_that_cover_the_corpus(shuffle_corpus, num_workers, world_size):
    shards = []
    for rank in range(world_size or 1):
        for worker in range(num_workers):
            reader = make_reader()
            reader._set_worker_info(WorkerInfo(num_workers, worker))
            if world_size:
                reader._set_distributed_info(DistributedInfo(world_size, rank))
            shards.append(documents(stream(reader.read(shuffle_corpus))))
    everything = [document for shard in shards for document in shard]
    assert all(shards)
    assert Counter(everything) == Counter(documents(stream(make_reader().read(shuffle_corpus))))


def test_built_from_params_with_the_registered_name(shuffle_corpus):
    reader = DatasetReader.from_params(
        Params({"type": "maelmo_mlm_corpus", "tokenizer": {"type": "maelmo_wordpiece", "vocab": VOCAB},
                "token_indexers": {"pieces": {"type": "single_id", "namespace": "wordpieces"}}})
    )  # fmt: skip
    assert isinstance(reader, MlmCorpusReader)
    first = next(iter(reader.read(shuffle_corpus)))
    assert texts([first])[0] == spaced("[CLS] The cat sleeps . [SEP] The cat ran . [SEP]")
    assert first["tokens"].token_indexers.keys() == {"pieces"}


def test_logs_the_counts_of_a_read(shuffle_corpus, caplog):
    with caplog.at_level(logging.INFO, logger=LOGGER):
        pieces = len(stream(make_reader().read(shuffle_corpus)))
    assert f"1 file(s): 6 documents, 12 paragraphs, {pieces} word-pieces." in caplog.text


def test_missing_file_and_empty_glob_are_reported(tmp_path):
    with pytest.raises(ConfigurationError, match=r"No such file: .*missing\.txt"):
        list(make_reader().read(str(tmp_path / "missing.txt")))
    with pytest.raises(ConfigurationError, match=r"glob pattern matches no file: .*nothing-\*\.txt"):
        list(make_reader().read(str(tmp_path / "nothing-*.txt")))


@pytest.mark.parametrize("content", ["", "\n  \n\t\n"])
def test_a_corpus_without_text_is_reported_with_its_files(tmp_path, content):
    (tmp_path / "empty.txt").write_text(content)
    (tmp_path / "blank.txt").write_text("\n\n")
    with pytest.raises(ConfigurationError, match=r"blank\.txt, .*empty\.txt contains no text"):
        list(make_reader().read(str(tmp_path / "*.txt")))


def test_undecodable_line_is_reported_with_file_and_line(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("The cat ran.\n\nThe caf\xe9 is old.\nThe dog ran.\n".encode("latin-1"))
    with pytest.raises(
        ConfigurationError, match=r"latin1\.txt, line 3: not valid UTF-8.*skip_undecodable_lines.*iconv"
    ):
        list(make_reader().read(str(path)))


def test_undecodable_lines_can_be_skipped_and_are_counted(tmp_path, caplog):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"The cat ran.\n\xff\xfe\nThe caf\xe9 is old.\n\nThe dog ran.\n")
    with caplog.at_level(logging.INFO, logger=LOGGER):
        pieces = stream(make_reader(skip_undecodable_lines=True).read(str(path)))
    assert pieces == spaced("[CLS] The cat ran . [SEP] [CLS] The dog ran . [SEP]")
    assert "Skipped 2 line(s) that are not valid UTF-8" in caplog.text
    assert "2 documents, 2 paragraphs" in caplog.text


def test_invalid_options_are_rejected():
    with pytest.raises(ConfigurationError, match="maelmo_wordpiece"):
        MlmCorpusReader(WhitespaceTokenizer())
    with pytest.raises(ConfigurationError, match="document_start_pattern"):
        make_reader(document_start_pattern="(")


def test_a_paragraph_over_the_splitters_limit_is_split_in_pieces_with_a_warning(
    tmp_path, caplog, monkeypatch
):
    monkeypatch.setattr(mlm_corpus, "MAX_SPLIT_CHARACTERS", 40)
    reader = make_reader(sentence_splitter=SpacySentenceSplitter(language="blank:en", rule_based=True))
    # spaCy's limit, lowered, so that a piece over it fails; the pipeline is shared, so it is restored.
    monkeypatch.setattr(reader.sentence_splitter.spacy, "max_length", 60)
    long_line = " ".join(["The cat sleeps on the house and the dog ran"] * 5) + "."
    path = tmp_path / "long.txt"
    path.write_text(f"The dog ran.\n{long_line}\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        pieces = stream(reader.read(str(path)))
    first, second = paragraphs(pieces)
    assert first == spaced("[CLS] The dog ran . [SEP]")
    # The same word-pieces as the line in one piece, with a [SEP] closing each 40-character piece.
    assert [piece for piece in second if piece != "[SEP]"] == ["[CLS]", *long_line.replace(".", " .").split()]
    assert second.count("[SEP]") == len(list(mlm_corpus._cut_at_whitespace(long_line, 40))) > 1
    assert f"{path}, line 2: a paragraph of {len(long_line)} characters" in caplog.text


def test_a_long_piece_without_whitespace_is_cut_at_the_limit():
    text = "a" * 25 + " " + "b" * 100
    pieces = list(mlm_corpus._cut_at_whitespace(text, 40))
    assert "".join(pieces) == text
    assert [len(piece) for piece in pieces] == [25, 40, 40, 21]


def test_tokenizer_calls_are_bounded_in_characters_and_the_stream_is_unchanged(shuffle_corpus, monkeypatch):
    expected = stream(make_reader().read(shuffle_corpus))
    monkeypatch.setattr(mlm_corpus, "_CHARACTERS_PER_TOKENIZER_CALL", 10)  # below every sentence's length
    reader = make_reader()
    calls = []
    batch_ids = reader.tokenizer.batch_ids
    monkeypatch.setattr(reader.tokenizer, "batch_ids", lambda texts: calls.append(texts) or batch_ids(texts))
    assert stream(reader.read(shuffle_corpus)) == expected
    # A call stops at the sentence that reaches the bound: here, one sentence per call.
    assert [len(texts) for texts in calls] == [1] * (len(ANIMALS) * 3)


def test_a_long_document_is_read_in_blocks_that_tokenize_to_the_same_ids(tmp_path, monkeypatch):
    # One document of 40 paragraphs: no blank line, so no document boundary at all.
    path = tmp_path / "one_document.txt"
    path.write_text("".join(f"The {ANIMALS[n % 6]} ran.\n" for n in range(40)), encoding="utf-8")
    reader = make_reader()
    whole = list(reader.paragraphs_by_document(str(path)))
    assert len(reader.document_blocks(str(path))) == 1
    monkeypatch.setattr(corpus_files, "BLOCK_BYTES", 50)  # a block ends at the line end that reaches 50 bytes
    blocks = reader.document_blocks(str(path))
    assert len(blocks) > 5 and [block.in_document for block in blocks] == [False] + [True] * (len(blocks) - 1)
    assert all(block.end == following.start for block, following in zip(blocks, blocks[1:]))
    assert {document for block in blocks[1:] for document, _ in reader.block_ids(block)} == {0}
    assert list(reader.paragraphs_by_document(str(path))) == whole


def test_blocks_keep_their_documents_apart(shuffle_corpus, monkeypatch):
    expected = list(make_reader().paragraphs_by_document(shuffle_corpus))
    monkeypatch.setattr(corpus_files, "BLOCK_BYTES", 1)  # every line a block
    reader = make_reader()
    blocks = reader.document_blocks(shuffle_corpus)
    # Each document's first line opens it (1), its second continues it (0); the blank line between opens none.
    assert [[document for document, _ in reader.block_ids(block)] for block in blocks] == (
        [[1], [0], []] * 5 + [[1], [0]]
    )
    assert list(reader.paragraphs_by_document(shuffle_corpus)) == expected
    assert [document for document, _ in expected] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]


@pytest.mark.parametrize("kind, name", VARIANTS)
def test_a_compressed_corpus_reads_as_its_text(tmp_path, monkeypatch, kind, name):
    monkeypatch.setattr(corpus_files, "BLOCK_BYTES", 30)  # blocks of a line or two: read by seeking forward
    path = write_compressed(tmp_path / name, SHUFFLE_CORPUS + WIKI, kind)
    plain = write_compressed(tmp_path / "plain.text", SHUFFLE_CORPUS + WIKI, "plain")
    reader = make_reader()
    assert texts(reader.read(str(path))) == texts(reader.read(str(plain)))
    blocks = reader.document_blocks(str(path))
    starts = [block.start for block in blocks]
    assert len(blocks) > 5 and starts == sorted(starts)


def test_an_undecodable_line_of_a_compressed_corpus_names_the_file_and_the_line(tmp_path):
    text = "The cat ran.\n\nThe caf\xe9 is old.\n"
    path = write_compressed(tmp_path / "latin1.txt.gz", text, "gzip", "latin-1")
    with pytest.raises(
        ConfigurationError,
        match=r"latin1\.txt\.gz, line 3: not valid UTF-8.*skip_undecodable_lines.*iconv.*gzip-compressed",
    ):
        list(make_reader().read(str(path)))


def test_a_directory_reads_its_files_in_name_order(tmp_path, caplog):
    corpus = tmp_path / "corpus"
    (corpus / "more").mkdir(parents=True)
    write_compressed(corpus / "b.txt.gz", "The dog ran.\n", "gzip")
    write_compressed(corpus / "a.txt", "The cat ran.\n", "plain")
    write_compressed(corpus / ".hidden.swp", "The fox ran.\n", "plain")
    write_compressed(corpus / "more" / "c.txt", "The fish ran.\n", "plain")
    with caplog.at_level(logging.WARNING, logger=corpus_files.__name__):
        pieces = stream(make_reader().read(str(corpus)))
    assert pieces == spaced("[CLS] The cat ran . [SEP] [CLS] The dog ran . [SEP]")
    assert "holds directories, which are not read: more" in caplog.text
    assert corpus_files.expand_paths(f"{corpus}/") == [str(corpus / "a.txt"), str(corpus / "b.txt.gz")]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigurationError, match=r"The corpus directory '.*empty' holds no file to read"):
        list(make_reader().read(str(tmp_path / "empty")))
