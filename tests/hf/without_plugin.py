"""
Imported first by the scripts that `tests/hf` runs in a subprocess (`load_export.py`, `train_heads.py`):
from then on, importing allennlp or maelmo_plugin fails in that process, as it would for a user who has
only `transformers`. The scripts find this module beside them (a script's directory is on sys.path).
"""

import importlib.util
from pathlib import Path

# tests/blocked_imports.py by its path: the tests package's __init__ imports the plugin.
_spec = importlib.util.spec_from_file_location(
    "blocked_imports", Path(__file__).resolve().parents[1] / "blocked_imports.py"
)
blocked_imports = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(blocked_imports)

BLOCKED = ("allennlp", "allennlp_models", "maelmo_plugin")
blocked_imports.block(BLOCKED, "an export must load without AllenNLP and the plugin")
