"""
An export loaded with `trust_remote_code=True` and saved again with `save_pretrained` is an export too
(docs/hf_export.md): the copy holds the module files and `auto_map`, and loads in a fresh process, without
AllenNLP or the plugin, to the same model. `resave_export.py` runs twice per version, under transformers 4.x
(the venv's: 4.43 on Python 3.11 and 3.12, 4.49 on 3.13 and 3.14) and 5.x: the first process loads the
fixture export with `AutoConfig` and with each `AutoModel*` class of `auto_map` (and takes the encoder out of
a masked LM), computes a batch and saves each with `save_pretrained`; the second, with a fresh `HF_HOME`,
loads each copy with `trust_remote_code=True`. Each copy must hold the export's three module files, byte for
byte, and its `auto_map`, and compute the same numbers, exactly.
"""

import json
from pathlib import Path
from typing import Any

import pytest

from maelmo_plugin.hf.export import AUTO_MAP
from tests.hf import run_without_plugin

RESAVE_EXPORT = Path(__file__).parent / "resave_export.py"
MODULE_FILES = ("configuration_masked_elmo.py", "modeling_masked_elmo.py", "cpu_lstm_recurrence.py")
# The class each copy holds: the encoder of a masked LM is saved and loaded as the encoder.
CLASSES = {
    "encoder": "MaskedElmoModel",
    "masked_lm": "MaskedElmoForMaskedLM",
    "sequence_classification": "MaskedElmoForSequenceClassification",
    "token_classification": "MaskedElmoForTokenClassification",
    "encoder_of_masked_lm": "MaskedElmoModel",
}


@pytest.fixture(scope="module", params=["4", "5"])
def resaved(request, masked_elmo_export, tmp_path_factory) -> dict[str, Any]:
    """The copies' directory, and what `resave_export.py` computed before saving and after loading."""
    copies = tmp_path_factory.mktemp(f"copies_transformers{request.param}")
    runs = {}
    for step in ("save", "load"):  # each in its own process, with its own HF_HOME
        work = tmp_path_factory.mktemp(f"{step}_transformers{request.param}")
        arguments = {"export": masked_elmo_export, "copies": str(copies), "step": step}
        runs[step] = run_without_plugin(RESAVE_EXPORT, arguments, request.param, work)
    return {"copies": copies, **runs}


def test_a_resaved_export_holds_the_module_files_and_the_auto_map(resaved, masked_elmo_export):
    copies = resaved["copies"]
    for name in CLASSES:
        assert sorted(path.name for path in (copies / name).glob("*.py")) == sorted(MODULE_FILES), name
        for module in MODULE_FILES:
            assert (copies / name / module).read_bytes() == (
                Path(masked_elmo_export) / module
            ).read_bytes(), module
        assert json.loads((copies / name / "config.json").read_text())["auto_map"] == AUTO_MAP, name
    module = "configuration_masked_elmo.py"
    assert (copies / "config" / module).read_bytes() == (Path(masked_elmo_export) / module).read_bytes()


def test_a_resaved_export_loads_in_a_fresh_process_to_the_same_model(resaved):
    saved, loaded = resaved["save"], resaved["load"]
    assert loaded["config"] == {"class": "MaskedElmoConfig", "hidden_size": 16}
    for name, class_name in CLASSES.items():
        assert saved[name]["class"] == loaded[name]["class"] == class_name
        # The same weights and code on the same batch: the same numbers, to the bit.
        assert loaded[name]["output"] == saved[name]["output"], name
    print(f"transformers {loaded['transformers_version']}: {len(CLASSES)} copies load and compute the same")
