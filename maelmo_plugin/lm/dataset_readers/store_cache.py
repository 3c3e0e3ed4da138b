"""
How a run gets its token store: the one a config names, or one made from text on first use, once for every
process that needs it.

A text corpus is tokenized into `<cache_directory>/<first file's name>-<key>/`, where the key hashes what decides
the ids: the files (absolute path, size, modification time) and the reader's settings (vocabulary, casing,
document boundaries). The first process to take the directory's file lock tokenizes; the others (the other
workers of a distributed run, other runs) wait on the lock and then open the same store. A changed file or
vocabulary gives a new key, so a stale store is never used; old ones stay until removed.
"""

import hashlib
import json
import logging
import os
from typing import Any, Optional

from allennlp.common import file_utils
from allennlp.common.checks import ConfigurationError
from filelock import FileLock

from maelmo_plugin.lm.dataset_readers.corpus_files import expand_paths
from maelmo_plugin.lm.dataset_readers.token_store import TokenStore, is_store, reader_settings

logger = logging.getLogger(__name__)


def default_cache_directory() -> str:
    """`maelmo_token_stores/` in AllenNLP's cache root (`$ALLENNLP_CACHE_ROOT`, by default `~/.allennlp`)."""
    return os.path.join(file_utils.CACHE_ROOT, "maelmo_token_stores")


def open_corpus(
    reader: Any, data_path: Any, cache_directory: Optional[str], rebuild: bool, quiet: bool
) -> TokenStore:
    """
    The token store for `data_path`: a prepared store, checked against `reader` (and, with `rebuild`, prepared
    again from its manifest's corpus files when it does not match), or the cached store of a text corpus.
    """
    if is_store(data_path):
        return _checked_store(reader, str(data_path), rebuild, quiet)
    paths = expand_paths(data_path)
    directory = os.path.join(cache_directory or default_cache_directory(), _cache_name(reader, paths))
    os.makedirs(os.path.dirname(directory), exist_ok=True)
    with _lock(directory):
        if is_store(directory):
            logger.info("Reading the corpus %s from its token store %s.", data_path, directory)
        else:
            logger.info("Tokenizing the corpus %s into %s (once: later runs reuse it).", data_path, directory)
            TokenStore.prepare(reader, paths, directory, quiet=quiet)
    return TokenStore(directory)


def _checked_store(reader: Any, directory: str, rebuild: bool, quiet: bool) -> TokenStore:
    store = TokenStore(directory)
    problem = store.mismatch(reader)
    if problem is None:
        return store
    if not rebuild:
        raise ConfigurationError(
            f"{problem}: `maelmo maelmo-prepare {' '.join(store.corpus_paths()) or 'CORPUS'} --vocab "
            f"<the config's vocab> --output-dir {directory} --force`, or set the data loader's "
            f"`rebuild_store: true` to have the run do it."
        )
    # Every worker finds the mismatch; the first to take the lock rebuilds, the others find it rebuilt.
    with _lock(directory):
        store = TokenStore(directory)
        if store.mismatch(reader) is not None:
            paths = [path for path in store.corpus_paths() if os.path.isfile(path)]
            if len(paths) != len(store.corpus_paths()):
                raise ConfigurationError(
                    f"{problem}, and rebuild_store cannot: some of its corpus files are gone "
                    f"({', '.join(sorted(set(store.corpus_paths()) - set(paths)))})."
                )
            logger.warning("%s: rebuilding it (rebuild_store: true).", problem)
            store = TokenStore.prepare(reader, paths, directory, force=True, quiet=quiet)
    return store


def _lock(directory: str) -> FileLock:
    """The lock that one process holds while it writes the store `directory`: a hidden file beside it."""
    parent, name = os.path.split(os.path.abspath(directory))
    return FileLock(os.path.join(parent, f".{name}.lock"))


def _cache_name(reader: Any, paths: list) -> str:
    files = [(os.path.abspath(path), os.path.getsize(path), os.stat(path).st_mtime_ns) for path in paths]
    settings = reader_settings(reader)
    key = hashlib.sha256(json.dumps([files, settings], sort_keys=True).encode("utf-8")).hexdigest()[:16]
    return f"{os.path.basename(paths[0])}-{key}"
