"""`allennlp maelmo-config`: a config as AllenNLP will see it (Jsonnet evaluated, variables and -o applied)."""

import json

from tests import FIXTURES_ROOT, PROJECT_ROOT, run_allennlp

RTE = str(PROJECT_ROOT / "training_config" / "glue" / "rte.jsonnet")
ENVIRONMENT = {
    "MAELMO_GLUE_DIR": "glue_data",
    "MAELMO_LM_ARCHIVE": "lm.tar.gz",
    "MAELMO_VOCAB": str(FIXTURES_ROOT / "lm" / "vocab.txt"),
}


def test_prints_the_expanded_config_with_the_overrides():
    result = run_allennlp(
        ["maelmo-config", RTE, "-o", '{"trainer.num_epochs": 2}', "--include-package", "maelmo_plugin"],
        ENVIRONMENT,
    )
    config = json.loads(result.stdout)
    assert config["trainer"]["num_epochs"] == 2  # the override
    assert config["train_data_path"] == "glue_data/RTE/train.tsv"  # the variable, through glue.libsonnet
    embedder = config["model"]["text_field_embedder"]["token_embedders"]["tokens"]
    assert (embedder["type"], embedder["archive_file"]) == ("maelmo_masked_elmo_embedder", "lm.tar.gz")
    assert embedder["requires_grad"] is True  # settings.encoder "archive-ft": fine-tuned
    assert "settings" not in config  # hidden fields are Jsonnet's, not AllenNLP's


def test_a_missing_variable_is_one_line_naming_the_config_and_the_variable(monkeypatch):
    for name in ("MAELMO_LM_ARCHIVE", "MAELMO_VOCAB"):
        monkeypatch.delenv(name, raising=False)
    result = run_allennlp(
        ["maelmo-config", RTE, "--include-package", "maelmo_plugin"],
        {"MAELMO_GLUE_DIR": "glue_data"},
        check=False,
    )
    assert result.returncode == 2
    assert "rte.jsonnet: RUNTIME ERROR: undefined external variable: MAELMO_" in result.stderr
    assert "Traceback" not in result.stderr
