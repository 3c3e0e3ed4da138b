"""
Imported first by the scripts that `tests/hf` runs in a subprocess (`load_export.py`, `train_heads.py`):
from then on, importing allennlp or maelmo_plugin fails in that process, as it would for a user who has
only `transformers`. The scripts find this module beside them (a script's directory is on sys.path).
"""

import importlib.abc
import sys

BLOCKED = ("allennlp", "allennlp_models", "maelmo_plugin")


class _Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked: an export must load without AllenNLP and the plugin")


sys.meta_path.insert(0, _Blocked())
for blocked in BLOCKED:
    try:
        __import__(blocked)
    except ImportError:
        pass
    else:
        raise SystemExit(f"{blocked} could be imported: the check would prove nothing")
