"""
0.1.0's configs read as today's (`maelmo_plugin/lm/config_upgrade.py`), wherever a config file is read; a config of
today passes unchanged. The archives 0.1.0 wrote load to the outputs they gave then: tests/lm/archives_0_1_0_test.py.
"""

import copy
import json
import logging

from allennlp.common import Params

from maelmo_plugin.lm.config_upgrade import upgrade_config

MASKED_ELMO_0_1_0 = {"type": "maelmo_masked_lm", "encoder": {"input_dim": 16, "cells": 24}}
ELMO_0_1_0 = {"type": "maelmo_elmo_lm", "encoder": {"input_dim": 8, "cells": 24}}
BERT_0_1_0 = {"type": "maelmo_bert_lm", "encoder": {"input_dim": 16, "num_layers": 2}, "num_mask_sets": 2}
GLUE_0_1_0 = {
    "model": {
        "type": "maelmo_glue_classifier",
        "text_field_embedder": {
            "token_embedders": {
                "tokens": {"type": "maelmo_embedder", "archive_file": "lm.tar.gz"},
                "words": {"type": "maelmo_mismatched_embedder", "archive_file": "lm.tar.gz"},
            }
        },
        "encoder": {"type": "lstm", "input_size": 16, "hidden_size": 8},
    }
}


def test_each_name_of_0_1_0_is_read_as_todays():
    configs = [copy.deepcopy(config) for config in (MASKED_ELMO_0_1_0, ELMO_0_1_0, BERT_0_1_0)]
    changes = [upgrade_config(config) for config in configs]
    assert configs == [
        {
            "type": "maelmo_masked_elmo_lm",
            "encoder": {"type": "maelmo_masked_elmo", "input_dim": 16, "cells": 24},
        },
        {"type": "maelmo_elmo_lm", "encoder": {"type": "maelmo_elmo_bilm", "input_dim": 8, "cells": 24}},
        {
            "type": "maelmo_masked_elmo_lm",
            "encoder": {"type": "maelmo_transformer", "input_dim": 16, "num_layers": 2},
            "num_mask_sets": 2,
            "output_transform": "bert",
        },
    ]
    assert changes == [
        [
            'the config.encoder.type "maelmo_masked_elmo"',
            'the config.type "maelmo_masked_lm" as "maelmo_masked_elmo_lm"',
        ],
        ['the config.encoder.type "maelmo_elmo_bilm"'],
        [
            'the config.encoder.type "maelmo_transformer"',
            'the config.type "maelmo_bert_lm" as "maelmo_masked_elmo_lm" with output_transform "bert"',
        ],
    ]
    glue = copy.deepcopy(GLUE_0_1_0)
    assert upgrade_config(glue) == [
        'model.text_field_embedder.token_embedders.tokens.type "maelmo_embedder" as "maelmo_masked_elmo_embedder"',
        'model.text_field_embedder.token_embedders.words.type "maelmo_mismatched_embedder" as '
        '"maelmo_masked_elmo_mismatched_embedder"',
    ]
    embedders = glue["model"]["text_field_embedder"]["token_embedders"]
    assert [embedders[name]["type"] for name in ("tokens", "words")] == [
        "maelmo_masked_elmo_embedder",
        "maelmo_masked_elmo_mismatched_embedder",
    ]
    assert glue["model"]["encoder"] == GLUE_0_1_0["model"]["encoder"]  # a GLUE encoder is no language model's


def test_a_config_of_today_passes_unchanged(tmp_path, caplog):
    today = {
        "model": {
            "type": "maelmo_masked_elmo_lm",
            "encoder": {"type": "lstm", "input_size": 16, "hidden_size": 8, "bidirectional": True},
        },
        "data_loader": {"type": "maelmo_btbptt", "batch_size": 2},
        "trainer": {"callbacks": [{"type": "maelmo_throughput"}]},
    }
    expected = copy.deepcopy(today)
    assert upgrade_config(today) == [] and today == expected
    path = tmp_path / "config.json"
    path.write_text(json.dumps(today))
    with caplog.at_level(logging.WARNING):
        assert Params.from_file(str(path)).as_dict(quiet=True) == expected
    assert "0.1.0" not in caplog.text


def test_a_config_file_of_0_1_0_is_read_as_todays_with_one_warning_naming_it(tmp_path, caplog):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model": BERT_0_1_0, "dataset_reader": {"type": "maelmo_mlm_corpus"}}))
    with caplog.at_level(logging.WARNING):
        model = Params.from_file(str(path)).as_dict(quiet=True)["model"]
    assert model["type"] == "maelmo_masked_elmo_lm" and model["output_transform"] == "bert"
    assert model["encoder"]["type"] == "maelmo_transformer"
    [warning] = [record.getMessage() for record in caplog.records if "0.1.0" in record.getMessage()]
    assert warning.startswith(f"{path} was written for maelmo_plugin 0.1.0, and is read as today's config: ")
    assert warning.endswith("0.1.0's configs are read until 1.0.")
