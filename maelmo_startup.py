"""
Run at interpreter start wherever the package is installed, by its one-line `maelmo_plugin_startup.pth`
(setup.py puts it in the wheel, scripts/setup.sh in an editable install), so that `allennlp ...` commands start
quietly and offline too: AllenNLP imports fairscale and its default plugins (allennlp-models, with the `ner`
extra) before it loads any plugin, so nothing in `maelmo_plugin` would come early enough.

- Warning filters for the exact third-party sources whose deprecation warnings open every command (fairscale
  and `torch.jit` on torch 2.x, py-rouge's `pkg_resources`).
- allennlp-models' NarrativeQA tools call `nltk.download("punkt")` and `("wordnet")` at import when punkt is
  missing: a network attempt and eight `[nltk_data] Error loading` lines on every command, `--help` included.
  For that one import, `nltk.download` does nothing (its data is needed only to score NarrativeQA).

It runs in every Python process of the environment, so it imports only what interpreter start has loaded
already (the finder and loader below are duck-typed rather than `importlib.abc` subclasses, which would import
`importlib.resources`), and does nothing more until that one module is imported.
"""

from __future__ import annotations

import sys
import warnings

TYPE_CHECKING = False  # typing itself costs milliseconds at every interpreter start
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any, Optional

NARRATIVEQA = "allennlp_models.rc.tools.narrativeqa"


def quiet_third_party_warnings() -> None:
    for module in (r"fairscale(\..*)?", r"torch\.jit\._script"):
        warnings.filterwarnings("ignore", category=FutureWarning, module=module)
    warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)


def _skip_download(info_or_id: Any = None, *args: Any, **kwargs: Any) -> bool:
    import logging

    logging.getLogger(__name__).debug(
        "nltk.download(%r) skipped while %s is imported", info_or_id, NARRATIVEQA
    )
    return False


class _WithoutDownloads:
    """Runs a module's loader with `nltk.download` doing nothing; its other methods are the loader's own."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def __getattr__(self, name: str) -> Any:
        # get_source, is_package, get_resource_reader, ...: what inspect, linecache and pkgutil ask for.
        return getattr(self.loader, name)

    def create_module(self, spec: ModuleSpec) -> Optional[ModuleType]:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        import nltk

        download = nltk.download
        nltk.download = _skip_download
        try:
            self.loader.exec_module(module)
        finally:
            nltk.download = download


class OfflineNarrativeQA:
    """Finds `NARRATIVEQA` with the other finders, and loads it through `_WithoutDownloads`."""

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]], target: Optional[ModuleType] = None
    ) -> Optional[ModuleSpec]:
        if fullname != NARRATIVEQA:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _WithoutDownloads(spec.loader)  # type: ignore[assignment]  # duck-typed
                return spec
        return None


def install() -> None:
    """Both of the above, once however often called."""
    quiet_third_party_warnings()
    if not any(isinstance(finder, OfflineNarrativeQA) for finder in sys.meta_path):
        sys.meta_path.insert(0, OfflineNarrativeQA())
