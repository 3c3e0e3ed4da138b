"""The maelmo_conll2003 reader gives conll2003's instances, from compressed files too, and names bad lines."""

import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers import Conll2003DatasetReader, DatasetReader

import maelmo_plugin  # noqa: F401
from maelmo_plugin.tagging.dataset_readers.conll2003 import Conll2003Reader
from tests import FIXTURES_ROOT
from tests.common.text_files_test import VARIANTS, write_compressed
from tests.tagging.ner_test import CONFIG, ner_environment

CONLL = FIXTURES_ROOT / "tagging" / "conll2003.txt"
# As in training_config/tagging/ner.jsonnet.
OPTIONS = {"tag_label": "ner", "convert_to_coding_scheme": "BIOUL"}


def fields(instances) -> list:
    return [([token.text for token in i["tokens"].tokens], i["tags"].labels) for i in instances]


NAMED = [(kind, name.replace("corpus.txt", "eng.train")) for kind, name in VARIANTS]


@pytest.mark.parametrize("kind, name", NAMED)
def test_a_compressed_file_gives_allennlps_instances_of_its_text(tmp_path, kind, name):
    path = write_compressed(tmp_path / name, CONLL.read_text(encoding="utf-8"), kind)
    expected = fields(Conll2003DatasetReader(**OPTIONS).read(str(CONLL)))
    assert len(expected) == 48 and expected[0] == (
        ["Paul", "works", "for", "Reuters", "in", "New", "York", "."],
        ["U-PER", "O", "O", "U-ORG", "O", "B-LOC", "L-LOC", "O"],
    )
    assert fields(Conll2003Reader(**OPTIONS).read(str(path))) == expected


def test_built_from_params_with_the_registered_name():
    reader = DatasetReader.from_params(Params({"type": "maelmo_conll2003", **OPTIONS}))
    assert isinstance(reader, Conll2003Reader)


@pytest.mark.parametrize(
    "text, message",
    [
        ("Paul NNP I-NP I-PER\nCaf\xe9 NNP I-NP I-ORG\n", r"eng\.train, line 2: not valid UTF-8 .*iconv"),
        ("Paul NNP I-NP I-PER\n\nworks NN O\n", r"eng\.train, line 3: 3 space-separated column"),
    ],
)
@pytest.mark.parametrize("kind", ["plain", "gzip"])
def test_a_bad_line_names_the_file_and_the_line(tmp_path, kind, text, message):
    path = write_compressed(tmp_path / "eng.train", text, kind, encoding="latin-1")
    with pytest.raises(ConfigurationError, match=message):
        list(Conll2003Reader(**OPTIONS).read(str(path)))


def test_the_ner_recipe_reads_a_compressed_file_with_this_reader(tmp_path, monkeypatch):
    # training_config/tagging/ner.jsonnet reads with it: a drop-in replacement of AllenNLP's `conll2003`.
    path = write_compressed(tmp_path / "eng.train", CONLL.read_text(encoding="utf-8"), "gzip")
    for name, value in ner_environment(str(tmp_path / "unused.tar.gz")).items():
        monkeypatch.setenv(name, value)
    params = Params.from_file(CONFIG)
    assert params["dataset_reader"]["type"] == "maelmo_conll2003"
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    assert fields(reader.read(str(path))) == fields(Conll2003DatasetReader(**OPTIONS).read(str(CONLL)))
