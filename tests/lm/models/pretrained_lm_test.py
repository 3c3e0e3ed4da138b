"""
Continued pre-training (`training_config/lm/continue.jsonnet`, the `maelmo_pretrained_lm` model): the fixture
Masked ELMo pre-trained further on text of another domain lowers that domain's held-out masked perplexity from
the starting model's, and the new archive works where a pre-trained one does, with the starting archive gone.
"""

import importlib.util
import json
import shutil

import pytest
from allennlp.commands.train import train_model_from_file
from allennlp.common.checks import ConfigurationError

from maelmo_plugin.api import MaskedElmo
from maelmo_plugin.hf.export import export_archive
from tests import FIXTURES_ROOT, PROJECT_ROOT, run_allennlp

CONFIG = PROJECT_ROOT / "training_config" / "lm" / "continue.jsonnet"
# The example that draws docs/continued_pretraining.md's figure: its test corpus is this test's (its sizes and
# held-out text are taken from it, so that the test checks what the example runs). The fixture model is
# pre-trained on corpus.txt; its new domain is repetitive.txt's four sentences, whose held-out part is the same
# sentences in another order.
EXAMPLE = PROJECT_ROOT / "examples" / "continued_pretraining" / "run.py"
spec = importlib.util.spec_from_file_location("continued_pretraining", EXAMPLE)
continued_pretraining = importlib.util.module_from_spec(spec)
spec.loader.exec_module(continued_pretraining)
SMALL = continued_pretraining.TEST_OVERRIDES


@pytest.fixture(scope="module")
def continued(masked_elmo_archive, tmp_path_factory):
    """The fixture archive continued on the new domain, from a copy that is deleted afterwards."""
    directory = tmp_path_factory.mktemp("continued")
    start = directory / "start.tar.gz"
    shutil.copy(masked_elmo_archive, start)
    held_out = directory / "held_out.txt"
    continued_pretraining.write_test_held_out(str(held_out))
    environment = {
        "MAELMO_LM_ARCHIVE": str(start),
        "MAELMO_VOCAB": str(FIXTURES_ROOT / "lm" / "vocab.txt"),
        "MAELMO_TRAIN_PATH": str(FIXTURES_ROOT / "lm" / "repetitive.txt"),
        "MAELMO_VALIDATION_PATH": str(held_out),
    }
    before = evaluate(str(start), held_out, directory / "before.json")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in environment.items():
            patch.setenv(name, value)
        train_model_from_file(str(CONFIG), str(directory / "run"), overrides=json.dumps(SMALL))
    start.unlink()  # the new archive must not need it
    return directory, before, held_out


def evaluate(archive: str, data, output) -> dict:
    run_allennlp(["evaluate", archive, str(data), "--output-file", str(output)], {})
    return json.loads(output.read_text())


def test_continuing_lowers_the_new_domains_held_out_perplexity(continued):
    directory, before, held_out = continued
    after = evaluate(str(directory / "run" / "model.tar.gz"), held_out, directory / "after.json")
    assert after["perplexity"] < 0.9 * before["perplexity"]
    config = json.loads((directory / "run" / "config.json").read_text())
    assert config["model"]["type"] == "maelmo_pretrained_lm"


def test_the_new_archive_embeds_and_exports_without_the_archive_it_started_from(continued, tmp_path):
    directory, _, _ = continued
    archive = str(directory / "run" / "model.tar.gz")
    elmo = MaskedElmo.from_archive(archive)
    vectors = elmo.embed(["The king lived in Berlin."], layer="mix", pool="sentence")
    assert vectors[0].shape == (16,)
    export_archive(archive, str(tmp_path / "hf"))
    assert (tmp_path / "hf" / "config.json").is_file()


def test_a_vocabulary_other_than_the_archives_is_refused(masked_elmo_archive, tmp_path, monkeypatch):
    other = tmp_path / "vocab.txt"
    pieces = (FIXTURES_ROOT / "lm" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    other.write_text("\n".join(pieces[:5] + list(reversed(pieces[5:]))) + "\n", encoding="utf-8")
    for name, value in {
        "MAELMO_LM_ARCHIVE": masked_elmo_archive,
        "MAELMO_VOCAB": str(other),
        "MAELMO_TRAIN_PATH": str(FIXTURES_ROOT / "lm" / "repetitive.txt"),
        "MAELMO_VALIDATION_PATH": str(FIXTURES_ROOT / "lm" / "corpus.txt"),
    }.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match="is not the one .* was pre-trained with"):
        train_model_from_file(str(CONFIG), str(tmp_path / "run"), overrides=json.dumps(SMALL))
    # The refused run's folder, which it created, is gone: the corrected command needs no -f.
    assert not (tmp_path / "run").exists()
