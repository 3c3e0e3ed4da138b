"""Fixtures shared by several test modules: a tiny Masked ELMo archive and a tiny ELMo-format biLM."""

import os
import tempfile
from pathlib import Path

# Token stores that runs cache from text go to AllenNLP's cache root: keep the suite's (and its subprocesses')
# out of the user's ~/.allennlp.
os.environ["ALLENNLP_CACHE_ROOT"] = tempfile.mkdtemp(prefix="maelmo-test-cache-")

import pytest  # noqa: E402
from allennlp.commands.train import train_model_from_file  # noqa: E402
from allennlp.common import file_utils  # noqa: E402
from allennlp.models.archival import Archive, load_archive  # noqa: E402

from maelmo_plugin.api import MaskedElmo  # noqa: E402
from maelmo_plugin.hf.export import export_archive  # noqa: E402
from tests import FIXTURES_ROOT  # noqa: E402
from tests.fixtures.elmo import write_tiny_elmo  # noqa: E402

file_utils.CACHE_ROOT = Path(
    os.environ["ALLENNLP_CACHE_ROOT"]
)  # in case allennlp was imported before this file


def _trained_archive(tmp_path_factory, config: str, num_epochs: int | None = None) -> str:
    """
    The archive of tests/fixtures/lm/`config` trained into a fresh temporary folder, for `num_epochs` epochs
    (None: as many as the config says). Each session fixture below trains one, once per run.
    """
    serialization_dir = tmp_path_factory.mktemp(Path(config).stem)
    overrides = {} if num_epochs is None else {"trainer.num_epochs": num_epochs}
    train_model_from_file(str(FIXTURES_ROOT / "lm" / config), str(serialization_dir), overrides=overrides)
    return str(serialization_dir / "model.tar.gz")


@pytest.fixture(scope="session")
def masked_elmo_archive(tmp_path_factory) -> str:
    """A `maelmo_masked_elmo_lm` (dims 16, tests/fixtures/lm/vocab.txt) trained for one epoch, once per run."""
    return _trained_archive(tmp_path_factory, "experiment.jsonnet", num_epochs=1)


@pytest.fixture(scope="session")
def fill_mask_archive(tmp_path_factory) -> str:
    """
    The fixture Masked ELMo trained for 50 epochs on `lm/repetitive.txt` (four sentences repeated), so that
    it fills an obvious [MASK] ("The king lived in [MASK]." -> "Berlin"). About 15 s, once per run.
    """
    return _trained_archive(tmp_path_factory, "fill_mask_experiment.jsonnet")


@pytest.fixture(scope="module")
def fill_mask_loaded(fill_mask_archive) -> Archive:
    """`fill_mask_archive` loaded, once per test module: the module's predictors share its (frozen) model."""
    return load_archive(fill_mask_archive)


@pytest.fixture(scope="module")
def fill_mask_elmo(fill_mask_archive) -> MaskedElmo:
    """`fill_mask_archive` through the Python API (`MaskedElmo.from_archive`), once per test module."""
    return MaskedElmo.from_archive(fill_mask_archive)


@pytest.fixture(scope="session")
def elmo_lm_archive(tmp_path_factory) -> str:
    """The fixture ELMo baseline (`maelmo_elmo_lm`) after one epoch, once per run."""
    return _trained_archive(tmp_path_factory, "elmo_experiment.jsonnet", num_epochs=1)


@pytest.fixture(scope="session")
def bert_lm_archive(tmp_path_factory) -> str:
    """The fixture BERT* (a `maelmo_transformer` encoder) after one epoch, once per run."""
    return _trained_archive(tmp_path_factory, "bert_experiment.jsonnet", num_epochs=1)


@pytest.fixture(scope="session")
def masked_elmo_export(masked_elmo_archive, tmp_path_factory) -> str:
    """
    `masked_elmo_archive` exported for transformers (`export_archive`), once per run: the modules that load an
    export share it, so they read it and never write into it.
    """
    return export_archive(masked_elmo_archive, str(tmp_path_factory.mktemp("hf_export") / "masked_elmo"))


@pytest.fixture(scope="session")
def tiny_elmo(tmp_path_factory) -> tuple[str, str]:
    """(options_path, weights_path) of a tiny ELMo-format biLM: output dim 32 (2 x projection 16)."""
    return write_tiny_elmo(tmp_path_factory.mktemp("tiny_elmo"))


@pytest.fixture(scope="session")
def glue_environment(masked_elmo_archive, tiny_elmo):
    """The MAELMO_* variables of training_config/glue/ pointing at the fixtures (apply with monkeypatch)."""
    options, weights = tiny_elmo
    return {
        "MAELMO_GLUE_DIR": str(FIXTURES_ROOT / "glue"),
        "MAELMO_VOCAB": str(FIXTURES_ROOT / "lm" / "vocab.txt"),
        "MAELMO_LM_ARCHIVE": masked_elmo_archive,
        "MAELMO_ELMO_OPTIONS": options,
        "MAELMO_ELMO_WEIGHTS": weights,
    }


@pytest.fixture(scope="module")
def with_glue_environment(glue_environment):
    """Sets `glue_environment` for a whole test module (the fixture configs under glue_models/ read it)."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in glue_environment.items():
            patch.setenv(name, value)
        yield glue_environment
