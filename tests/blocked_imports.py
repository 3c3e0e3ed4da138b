"""
Makes importing some top-level packages fail in the process that calls `block`, as it would where they are not
installed: the scripts that tests run in a subprocess to show that an export loads (tests/hf) or runs
(tests/onnx) without them. Those scripts load this file by its path, not through the `tests` package, whose
`__init__` imports the plugin.
"""

import importlib.abc
import sys


def block(names: tuple, why: str) -> None:
    """From now on `import NAME` (and its submodules) fails for each of `names`; stops if one was imported already."""

    class Blocked(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in names:
                raise ImportError(f"{name} is blocked: {why}")

    sys.meta_path.insert(0, Blocked())
    for name in names:
        if name in sys.modules:
            raise SystemExit(f"{name} was imported before the block: the check would prove nothing")
        try:
            __import__(name)
        except ImportError:
            pass
        else:
            raise SystemExit(f"{name} could be imported: the check would prove nothing")
