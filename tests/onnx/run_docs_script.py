"""
Run by tests/onnx/export_test.py in a subprocess: `python run_docs_script.py DOCS_PAGE EXPORT_DIR OUTPUT.npz
[MODEL_FILE]` runs the Python script of DOCS_PAGE (its first ```python block) on EXPORT_DIR (and MODEL_FILE,
the script's second argument, if given), in a process where importing torch, transformers, allennlp or
maelmo_plugin fails, and saves the script's `inputs` and `hidden_states`.
"""

import importlib.util
import re
import sys
from pathlib import Path

import numpy

# tests/blocked_imports.py by its path: the tests package's __init__ imports the plugin.
_spec = importlib.util.spec_from_file_location(
    "blocked_imports", Path(__file__).resolve().parents[1] / "blocked_imports.py"
)
blocked_imports = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(blocked_imports)

BLOCKED = ("torch", "transformers", "allennlp", "allennlp_models", "maelmo_plugin")
blocked_imports.block(BLOCKED, "the ONNX export must run without it")

docs_page, export_dir, output, *model_file = sys.argv[1:]
with open(docs_page, encoding="utf-8") as page:
    script = re.search(r"```python\n(.*?)```", page.read(), re.DOTALL).group(1)
sys.argv = ["script.py", export_dir, *model_file]
namespace = {"__name__": "__main__"}
exec(compile(script, docs_page, "exec"), namespace)  # noqa: S102  the docs' own script, from this repository
loaded = sorted(name for name in sys.modules if name.split(".")[0] in BLOCKED)
if loaded:
    raise SystemExit(f"the script imported {loaded}")
numpy.savez(output, hidden_states=namespace["hidden_states"], **namespace["inputs"])
