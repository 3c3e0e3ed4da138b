import logging
import os
import re
from pathlib import Path

import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, Vocabulary
from allennlp.data.dataset_readers import DatasetReader
from allennlp.data.dataset_readers.dataset_reader import WorkerInfo
from allennlp.data.fields import LabelField, TensorField

from maelmo_plugin.common.wordpiece import WordpieceTokenizer
from maelmo_plugin.glue.dataset_readers.glue import GlueReader
from maelmo_plugin.glue.tasks import resolve_glue_task
from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.common.text_files_test import VARIANTS, write_compressed

GLUE = FIXTURES_ROOT / "glue"
VOCAB = str(FIXTURES_ROOT / "lm" / "vocab.txt")
LOGGER = "maelmo_plugin.glue.dataset_readers.glue"
SINGLE = ("tokens",)
PAIR = ("premise", "hypothesis")
RTE_HEADER = "index\tsentence1\tsentence2\tlabel\n"
STSB_HEADER = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
STSB_ROW = "0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane .\tAn air plane .\t"


def read(task: str, path, **kwargs) -> list:
    # The layout tests read test files too; refusing them by default has its own test.
    kwargs.setdefault("allow_unlabelled", True)
    return list(GlueReader(task, **kwargs).read(str(path)))


def words(instance, field: str) -> list:
    return [token.text for token in instance[field].tokens]


def label(instance):
    if "label" not in instance.fields:
        return None
    field = instance["label"]
    return field.label if isinstance(field, LabelField) else round(field.tensor.item(), 6)


def write(tmp_path: Path, text: str, name: str = "bad.tsv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# task, file, fields, labels (None: unlabelled test file), metadata indices, 1-based line numbers
LAYOUTS = [
    ("cola", "CoLA/train.tsv", SINGLE, ["1", "0", "1"], [0, 1, 2], [1, 2, 3]),
    ("CoLA", "CoLA/dev.tsv", SINGLE, ["0", "1"], [0, 1], [1, 2]),
    ("cola", "CoLA/test.tsv", SINGLE, None, [0, 1], [2, 3]),
    ("SST-2", "SST-2/train.tsv", SINGLE, ["0", "1", "0"], [0, 1, 2], [2, 3, 4]),
    ("sst2", "SST-2/test.tsv", SINGLE, None, [0, 1], [2, 3]),
    ("mrpc", "MRPC/train.tsv", PAIR, ["1", "0"], [0, 1], [2, 3]),
    ("MRPC", "MRPC/test.tsv", PAIR, None, [0], [2]),
    ("STS-B", "STS-B/train.tsv", PAIR, [1.0, 0.76, 0.0], [0, 1, 2], [2, 3, 4]),
    ("stsb", "STS-B/test.tsv", PAIR, None, [0], [2]),
    ("qqp", "QQP/train.tsv", PAIR, ["0", "1"], [133273, 402555], [2, 3]),
    ("QQP", "QQP/test.tsv", PAIR, None, [0], [2]),
    ("mnli", "MNLI/train.tsv", PAIR, ["neutral", "entailment"], [0, 1], [2, 3]),
    ("MNLI", "MNLI/dev_matched.tsv", PAIR, ["neutral", "contradiction"], [0, 1], [2, 3]),
    ("mnli", "MNLI/test_matched.tsv", PAIR, None, [0], [2]),
    ("qnli", "QNLI/train.tsv", PAIR, ["not_entailment", "entailment"], [0, 1], [2, 3]),
    ("QNLI", "QNLI/test.tsv", PAIR, None, [0], [2]),
    ("rte", "RTE/train.tsv", PAIR, ["not_entailment", "entailment"], [0, 1], [2, 3]),
    ("RTE", "RTE/test.tsv", PAIR, None, [0, 1], [2, 3]),
    ("wnli", "WNLI/train.tsv", PAIR, ["1", "0"], [0, 1], [2, 3]),
    ("WNLI", "WNLI/test.tsv", PAIR, None, [0, 1], [2, 3]),
    ("ax", "AX/diagnostic.tsv", PAIR, None, [0, 1], [2, 3]),
]


@pytest.mark.parametrize("task, file, fields, labels, indices, lines", LAYOUTS)
def test_every_layout_gives_its_fields_labels_and_metadata(task, file, fields, labels, indices, lines):
    instances = read(task, GLUE / file)
    expected_fields = set(fields) | {"metadata"} | ({"label"} if labels is not None else set())
    assert [set(instance.fields) for instance in instances] == [expected_fields] * len(indices)
    assert [label(instance) for instance in instances] == (labels or [None] * len(indices))
    assert [instance["metadata"]["index"] for instance in instances] == indices
    assert [instance["metadata"]["line"] for instance in instances] == lines


# Rows whose sentence starts with a double quote: a CSV reader would merge them with following rows.
QUOTED = [
    ("cola", "CoLA/train.tsv", 2, "tokens", '"Good morning , " said the cat .'),
    ("cola", "CoLA/test.tsv", 1, "tokens", '"Who ate ?" asked Mary .'),
    ("sst2", "SST-2/train.tsv", 1, "tokens", '" a charming and often affecting journey . '),
    (
        "mrpc",
        "MRPC/train.tsv",
        0,
        "hypothesis",
        '"Referring to him as the witness , " Amrozi accused his brother .',
    ),  # noqa: E501
    ("stsb", "STS-B/train.tsv", 1, "hypothesis", '"A man is playing a flute ."'),
    ("qqp", "QQP/train.tsv", 1, "premise", '"What is a quote ?"'),
    ("mnli", "MNLI/train.tsv", 1, "premise", 'you know during the season " i guess'),
    ("qnli", "QNLI/train.tsv", 1, "hypothesis", '"Some" batteries have launchers .'),
    ("rte", "RTE/train.tsv", 1, "premise", '"Extensive" damage was found at the refinery .'),
    ("ax", "AX/diagnostic.tsv", 1, "premise", '"The" cat sat .'),
]


@pytest.mark.parametrize("task, file, row, field, text", QUOTED)
def test_sentences_starting_with_a_quote_are_read_verbatim(task, file, row, field, text):
    # The default WhitespaceTokenizer splits on whitespace only, so quotes stay on their words.
    assert words(read(task, GLUE / file)[row], field) == text.split()


def test_first_rows_token_texts():
    cola = read("cola", GLUE / "CoLA" / "train.tsv")
    assert words(cola[0], "tokens") == "The sailors rode the breeze clear of the rocks .".split()
    mnli = read("mnli", GLUE / "MNLI" / "dev_matched.tsv")
    assert words(mnli[1], "premise") == "This site includes a list .".split()
    assert words(mnli[1], "hypothesis") == "The site does not have a list .".split()


@pytest.mark.parametrize(
    "task, file, keys",
    [
        ("sst2", "SST-2/train.tsv", {"tokens", "label", "metadata"}),
        ("rte", "RTE/train.tsv", {"premise", "hypothesis", "label", "metadata"}),
        ("stsb", "STS-B/train.tsv", {"premise", "hypothesis", "label", "metadata"}),
        ("rte", "RTE/test.tsv", {"premise", "hypothesis", "metadata"}),
    ],
)
def test_tensor_dict_keys(task, file, keys):
    instances = read(task, GLUE / file)
    vocab = Vocabulary.from_instances(instances)
    for instance in instances:
        instance.index_fields(vocab)
        assert instance.as_tensor_dict().keys() == keys
    assert Batch(instances).as_tensor_dict().keys() == keys


def test_labels_go_to_the_labels_namespace_and_stsb_scores_are_divided_by_five():
    rte = read("rte", GLUE / "RTE" / "train.tsv")
    vocab = Vocabulary.from_instances(rte)
    assert set(vocab.get_token_to_index_vocabulary("labels")) == {"entailment", "not_entailment"}
    stsb = read("stsb", GLUE / "STS-B" / "train.tsv")
    assert isinstance(stsb[0]["label"], TensorField)
    batch = Batch(stsb)
    batch.index_instances(Vocabulary.from_instances(stsb))
    assert batch.as_tensor_dict()["label"].tolist() == pytest.approx([1.0, 0.76, 0.0])


@pytest.mark.parametrize(
    "name, expected",
    [("CoLA", "cola"), ("SST-2", "sst2"), ("sst-2", "sst2"), ("STS-B", "stsb"), ("MNLI", "mnli"),
     ("Qqp", "qqp"), ("AX", "ax"), ("diagnostic", "ax")],
)  # fmt: skip
def test_task_names_accept_glue_folder_spellings(name, expected):
    assert resolve_glue_task(name).name == expected


def test_unknown_task_lists_the_valid_ones():
    message = r"Unknown GLUE task 'sst5'; valid tasks are: cola \(CoLA\), sst2 \(SST-2\), mrpc"
    with pytest.raises(ConfigurationError, match=message):
        GlueReader("sst5")


def test_a_file_of_another_task_is_reported():
    with pytest.raises(ConfigurationError, match=r"RTE/train\.tsv, line 1 \(header\): no 'sentence' column"):
        read("sst2", GLUE / "RTE" / "train.tsv")
    # MNLI's header has sentence1/sentence2 too: its gold_label column must not make it a "test file".
    message = r"dev_matched\.tsv, line 1 \(header\): no 'label' column, but .*'gold_label'"
    with pytest.raises(ConfigurationError, match=message):
        read("rte", GLUE / "MNLI" / "dev_matched.tsv")


RTE_BAD = [
    (
        "1\tA cat .\tA dog .\n",
        r"line 3, column 'label': missing: the row has 3 tab-separated columns, expected 4",
    ),  # noqa: E501
    (
        "1\tA cat .\tA dog .\tentailment\tx\n",
        r"line 3, column 5 \(after 'label'\): unexpected: the row has 5",
    ),  # noqa: E501
    ("1\tA cat .\tA dog .\tmaybe\n", r"line 3, column 'label': the label 'maybe' is not one of"),
    ("1\t  \tA dog .\tentailment\n", r"line 3, column 'sentence1': the sentence is empty"),
    ("1\tA cat .\t\tentailment\n", r"line 3, column 'sentence2': the sentence is empty"),
]


@pytest.mark.parametrize("bad_row, message", RTE_BAD)
def test_malformed_rows_name_file_line_and_column(tmp_path, bad_row, message):
    path = write(tmp_path, RTE_HEADER + "0\tA cat .\tA dog .\tentailment\n" + bad_row)
    with pytest.raises(ConfigurationError, match=r"bad\.tsv, " + message + r".*skip_malformed_rows: true"):
        read("rte", path)


@pytest.mark.parametrize(
    "score, message",
    [("five", "the score 'five' is not a number"), ("7.5", r"the score '7.5' is outside \[0, 5\]"),
     ("nan", r"the score 'nan' is outside")],
)  # fmt: skip
def test_malformed_stsb_scores(tmp_path, score, message):
    path = write(tmp_path, STSB_HEADER + STSB_ROW + score + "\n")
    with pytest.raises(ConfigurationError, match=r"bad\.tsv, line 2, column 'score': " + message):
        read("stsb", path)


def test_malformed_headerless_cola_row_names_the_column(tmp_path):
    path = write(tmp_path, "gj04\t1\t\tA cat sat .\ngj04\t2\t*\tCat a sat .\n")
    with pytest.raises(ConfigurationError, match=r"bad\.tsv, line 2, column 'label': the label '2'"):
        read("cola", path)


def test_skipped_rows_are_counted_and_logged_per_file(tmp_path, caplog):
    rows = ["0\tA cat .\tA dog .\tentailment", "1\tA cat .\tA dog .\tmaybe", "2\tA cat .\tA dog .",
            "3\tOne .\tTwo .\tnot_entailment"]  # fmt: skip
    path = write(tmp_path, RTE_HEADER + "\n".join(rows) + "\n")
    with caplog.at_level(logging.INFO, logger=LOGGER):
        instances = read("rte", path, skip_malformed_rows=True)
    assert [instance["metadata"]["line"] for instance in instances] == [2, 5]
    assert [label(instance) for instance in instances] == ["entailment", "not_entailment"]
    assert "Skipped 2 malformed row(s) of " + str(path) in caplog.text
    assert "the first: line 3, column 'label': the label 'maybe'" in caplog.text


def test_max_tokens_truncates_each_sentence_and_counts_it(caplog):
    with caplog.at_level(logging.INFO, logger=LOGGER):
        instances = read("rte", GLUE / "RTE" / "train.tsv", max_tokens=5)
    assert words(instances[0], "premise") == "No Weapons of Mass Destruction".split()
    assert words(instances[1], "hypothesis") == "The refinery was damaged .".split()
    assert "Truncated 3 of 4 sentence(s)" in caplog.text


def test_truncation_keeps_the_sep_of_a_wrapping_tokenizer_and_ids_are_indexed():
    reader = GlueReader("cola", tokenizer=WordpieceTokenizer(VOCAB, add_special_tokens=True), max_tokens=4)
    instance = list(reader.read(str(GLUE / "CoLA" / "dev.tsv")))[0]
    tokens = instance["tokens"].tokens
    # Wrapped once, by the tokenizer; the reader cuts the middle and keeps the final [SEP].
    assert [token.text for token in tokens] == ["[CLS]", *[t.text for t in tokens[1:3]], "[SEP]"]
    assert [token.text for token in tokens].count("[CLS]") == 1
    # The word-piece ids come from Token.text_id; only the label needs the vocabulary.
    instance.index_fields(Vocabulary.from_instances([instance]))
    ids = instance.as_tensor_dict()["tokens"]["tokens"]["tokens"].tolist()
    assert ids == [token.text_id for token in tokens]
    assert ids[0] == reader._tokenizer.token_id("[CLS]")


def test_without_special_tokens_truncation_keeps_the_first_pieces():
    tokenizer = WordpieceTokenizer(VOCAB)
    reader = GlueReader("cola", tokenizer=tokenizer, max_tokens=2)
    tokens = reader.text_to_instance("the cat sat on the mat")["tokens"].tokens
    pieces = [token.text for token in tokenizer.tokenize("the cat sat on the mat")]
    assert [token.text for token in tokens] == pieces[:2]


def test_max_tokens_must_leave_room_for_a_token():
    message = r"at least 3 \(room for \[CLS\], one token and \[SEP\]\), got 2"
    with pytest.raises(ConfigurationError, match=message):
        GlueReader("cola", tokenizer=WordpieceTokenizer(VOCAB, add_special_tokens=True), max_tokens=2)
    with pytest.raises(ConfigurationError, match="max_tokens must be at least 1, got 0"):
        GlueReader("cola", max_tokens=0)


def test_text_to_instance_for_predictors():
    reader = GlueReader("rte")
    instance = reader.text_to_instance("A cat sat .", "A cat .", label="entailment", index=7)
    assert words(instance, "premise") == ["A", "cat", "sat", "."]
    assert label(instance) == "entailment"
    assert instance["metadata"].metadata == {"index": 7, "line": None}
    assert "label" not in reader.text_to_instance("A cat sat .", "A cat .").fields
    assert label(GlueReader("stsb").text_to_instance("A .", "B .", label=4)) == 0.8
    with pytest.raises(ValueError, match=r"rte task takes 2 sentence\(s\), got 1"):
        reader.text_to_instance("A cat sat .")
    with pytest.raises(ValueError, match=r"label: the label 'yes' is not one of"):
        reader.text_to_instance("A cat sat .", "A cat .", label="yes")
    with pytest.raises(ValueError, match=r"sentence 2: the sentence is empty"):
        reader.text_to_instance("A cat sat .", " ")


def test_workers_read_disjoint_rows_that_cover_the_file():
    indices = []
    for worker in range(2):
        reader = GlueReader("sst2")
        reader._set_worker_info(WorkerInfo(2, worker))
        instances = reader.read(str(GLUE / "SST-2" / "train.tsv"))
        indices.append([instance["metadata"]["index"] for instance in instances])
    assert indices == [[0, 2], [1]]


def test_built_from_params_with_the_registered_name():
    params = Params({"type": "maelmo_glue", "task": "STS-B", "skip_malformed_rows": True, "max_tokens": 3})
    reader = DatasetReader.from_params(params)
    assert isinstance(reader, GlueReader) and reader.task.name == "stsb"
    first = next(iter(reader.read(str(GLUE / "STS-B" / "train.tsv"))))
    assert words(first, "premise") == ["A", "plane", "is"]
    assert first["premise"].token_indexers.keys() == {"tokens"}


@pytest.mark.parametrize(
    "task, file", [("rte", "RTE/test.tsv"), ("cola", "CoLA/test.tsv"), ("ax", "AX/diagnostic.tsv")]
)
def test_an_unlabelled_test_file_is_refused_where_labels_are_needed(task, file):
    message = "has no 'label' column: it looks like GLUE's unlabelled test file.*--predictor maelmo_glue"
    with pytest.raises(ConfigurationError, match=re.escape(file) + " " + message):
        read(task, GLUE / file, allow_unlabelled=False)


def test_a_test_file_is_reported_once(caplog):
    reader = GlueReader("rte", allow_unlabelled=True)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        for _ in range(2):
            list(reader.read(str(GLUE / "RTE" / "test.tsv")))
    assert caplog.text.count("has no label column (a test file)") == 1


def test_crlf_line_ends_and_blank_lines_are_not_rows(tmp_path):
    path = tmp_path / "crlf.tsv"
    path.write_bytes(b"sentence\tlabel\r\nA cat .\t1\r\n\r\nA dog .\t0\r\n\r\n")
    instances = read("sst2", path)
    assert [label(instance) for instance in instances] == ["1", "0"]
    assert [instance["metadata"]["line"] for instance in instances] == [2, 4]


def test_an_empty_file_is_reported(tmp_path):
    with pytest.raises(ConfigurationError, match=r"empty\.tsv is empty"):
        read("rte", write(tmp_path, "\n", "empty.tsv"))


@pytest.mark.parametrize(
    "kind, name", [(kind, name.replace("corpus.txt", "train.tsv")) for kind, name in VARIANTS]
)
def test_a_compressed_file_reads_as_its_text(tmp_path, kind, name):
    for task, file in [("rte", "RTE/train.tsv"), ("mrpc", "MRPC/train.tsv"), ("stsb", "STS-B/train.tsv")]:
        text = (GLUE / file).read_text(encoding="utf-8")
        path = write_compressed(tmp_path / name, text, kind)
        expected = read(task, GLUE / file)
        instances = read(task, path)
        assert [[words(i, f) for f in ("premise", "hypothesis")] for i in instances] == [
            [words(i, f) for f in ("premise", "hypothesis")] for i in expected
        ]
        assert [(label(i), i["metadata"]["line"]) for i in instances] == [
            (label(i), i["metadata"]["line"]) for i in expected
        ]


@pytest.mark.parametrize("kind", ["plain", "gzip"])
def test_a_row_that_is_not_utf8_names_the_file_and_the_line(tmp_path, kind):
    text = RTE_HEADER + "0\tA cat .\tA cat sleeps .\tentailment\n1\tThe caf\xe9 .\tA dog .\tentailment\n"
    path = write_compressed(tmp_path / "train.tsv", text, kind, encoding="latin-1")
    with pytest.raises(ConfigurationError, match=r"train\.tsv, line 3: not valid UTF-8 .*iconv -f LATIN1"):
        read("rte", path)


# A test-only variable, so that a MAELMO_GLUE_DIR set for training does not change what the tests read.
REAL_GLUE = Path(os.environ.get("MAELMO_TEST_GLUE_DIR", PROJECT_ROOT.parent / "shared" / "data" / "glue"))
REAL_VOCAB = REAL_GLUE.parent / "vocab" / "bert-base-cased-vocab.txt"
# The published GLUE sizes: a reader yielding another number from these files is wrong.
PUBLISHED = [
    ("RTE", "train", 2490), ("RTE", "dev", 277), ("CoLA", "train", 8551), ("CoLA", "dev", 1043),
    ("SST-2", "train", 67349), ("SST-2", "dev", 872), ("WNLI", "train", 635), ("WNLI", "dev", 71),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("task, split, rows", PUBLISHED)
def test_real_glue_files_give_the_published_row_counts(task, split, rows):
    path = REAL_GLUE / task / f"{split}.tsv"
    if not path.is_file() or not REAL_VOCAB.is_file():
        pytest.skip(f"{path} or {REAL_VOCAB} is absent")
    # The paper's word-pieces: a row with no word-piece would be an error, not a silent loss.
    reader = GlueReader(task, tokenizer=WordpieceTokenizer(str(REAL_VOCAB), add_special_tokens=True))
    instances = list(reader.read(str(path)))
    assert len(instances) == rows
    assert {label(instance) for instance in instances} == set(resolve_glue_task(task).labels)
    assert [instance["metadata"]["line"] for instance in instances][-1] == rows + (task != "CoLA")
