"""
Run by tests/onnx/export_test.py in a subprocess: `python run_docs_script.py DOCS_PAGE EXPORT_DIR OUTPUT.npz`
runs the Python script of DOCS_PAGE (its first ```python block) on EXPORT_DIR, in a process where importing
torch, transformers, allennlp or maelmo_plugin fails, and saves the script's `inputs` and `hidden_states`.
"""

import importlib.abc
import re
import sys

import numpy

BLOCKED = ("torch", "transformers", "allennlp", "allennlp_models", "maelmo_plugin")


class _Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked: the ONNX export must run without it")


sys.meta_path.insert(0, _Blocked())
for blocked in BLOCKED:
    if blocked in sys.modules:
        raise SystemExit(f"{blocked} was imported before the block: the check would prove nothing")
    try:
        __import__(blocked)
    except ImportError:
        pass
    else:
        raise SystemExit(f"{blocked} could be imported: the check would prove nothing")

docs_page, export_dir, output = sys.argv[1:]
with open(docs_page, encoding="utf-8") as page:
    script = re.search(r"```python\n(.*?)```", page.read(), re.DOTALL).group(1)
sys.argv = ["script.py", export_dir]
namespace = {"__name__": "__main__"}
exec(compile(script, docs_page, "exec"), namespace)  # noqa: S102  the docs' own script, from this repository
loaded = sorted(name for name in sys.modules if name.split(".")[0] in BLOCKED)
if loaded:
    raise SystemExit(f"the script imported {loaded}")
numpy.savez(output, hidden_states=namespace["hidden_states"], **namespace["inputs"])
