"""
Configs written for maelmo_plugin 0.1.0, read as today's: the one place that knows 0.1.0's names, applied
wherever a config file is read (`Params.from_file`, through `maelmo_plugin.compat`): an archive's
`config.json` under `load_archive`, `allennlp evaluate` and `predict`, `lm/loading.py` (every way the plugin
opens a language model), a GLUE archive's copy of its language model, and a training config. A config of today
passes through unchanged.

What 0.1.0 wrote, and what it means now:
* a language model's `encoder` named no `"type"`: the model's own encoder, `"maelmo_masked_elmo"` for
  `maelmo_masked_elmo_lm` and `"maelmo_elmo_bilm"` for `maelmo_elmo_lm`;
* BERT\\* was a model of its own, `"maelmo_bert_lm"`: today `maelmo_masked_elmo_lm` with a `"maelmo_transformer"`
  encoder and `output_transform: "bert"`, the same parameters under the same names;
* the masked LM and the two token embedders had shorter names: `"maelmo_masked_lm"`, `"maelmo_embedder"`,
  `"maelmo_mismatched_embedder"`.

Each upgrade is one warning naming the file and what was read, so that a user can write the config anew.
CHANGELOG.md allows config changes before 1.0: this module goes in 1.0 (`REMOVED_IN`), and with it the
reading of 0.1.0's archives.
"""

import logging
from typing import Any

logger = logging.getLogger(__name__)

REMOVED_IN = "1.0"

RENAMED = {
    "maelmo_masked_lm": "maelmo_masked_elmo_lm",
    "maelmo_embedder": "maelmo_masked_elmo_embedder",
    "maelmo_mismatched_embedder": "maelmo_masked_elmo_mismatched_embedder",
}
# The encoder each language model meant when its config named none.
DEFAULT_ENCODERS = {
    "maelmo_masked_elmo_lm": "maelmo_masked_elmo",
    "maelmo_masked_lm": "maelmo_masked_elmo",
    "maelmo_elmo_lm": "maelmo_elmo_bilm",
    "maelmo_bert_lm": "maelmo_transformer",
}


def upgrade_config(config: Any) -> list[str]:
    """
    Rewrites, in place, what 0.1.0 wrote in `config` (a config's dict, at any depth: a GLUE config holds its
    language model's), and returns what it read as what, one entry each; empty for a config of today.
    """
    changes: list[str] = []
    _visit(config, "", changes)
    return changes


def upgrade_and_warn(config: Any, shown: str) -> None:
    """`upgrade_config`, with one warning naming `shown` (the file) when anything was 0.1.0's."""
    changes = upgrade_config(config)
    if changes:
        logger.warning(
            "%s was written for maelmo_plugin 0.1.0, and is read as today's config: %s. Write these into the "
            "config to silence this; 0.1.0's configs are read until %s.",
            shown,
            "; ".join(changes),
            REMOVED_IN,
        )


def _visit(node: Any, path: str, changes: list[str]) -> None:
    if isinstance(node, list):
        for index, item in enumerate(node):
            _visit(item, f"{path}[{index}]", changes)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    where = path or "the config"
    encoder = node.get("encoder")
    if kind in DEFAULT_ENCODERS and isinstance(encoder, dict) and "type" not in encoder:
        encoder["type"] = DEFAULT_ENCODERS[kind]
        changes.append(f'{where}.encoder.type "{encoder["type"]}"')
    if kind == "maelmo_bert_lm":
        node["type"] = "maelmo_masked_elmo_lm"
        node["output_transform"] = "bert"
        changes.append(
            f'{where}.type "maelmo_bert_lm" as "maelmo_masked_elmo_lm" with output_transform "bert"'
        )
    elif isinstance(kind, str) and kind in RENAMED:
        node["type"] = RENAMED[kind]
        changes.append(f'{where}.type "{kind}" as "{RENAMED[kind]}"')
    for key, value in node.items():
        _visit(value, f"{path}.{key}" if path else key, changes)
