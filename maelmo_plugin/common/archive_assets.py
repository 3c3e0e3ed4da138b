"""
What a model needs besides its weights, copied into its serialization directory so that its `model.tar.gz`
travels: the word-piece tokenizer, the architecture and vocabulary of a language model that a GLUE model was
fine-tuned from, the original ELMo's options. Without the copies an archive's `config.json` points back at
the files it was trained from (a `vocab.txt` in a checkout, `MAELMO_LM_ARCHIVE`, ELMo's `options.json`), and
it stops loading when they move.

    serialization_dir/maelmo_assets/
        tokenizer-<key>/        save_pretrained of the HF fast tokenizer          (maelmo_wordpiece tokenizer)
        language_model-<key>/   config.json + vocabulary/ of the LM archive       (maelmo_masked_elmo_embedder)
        elmo-<key>/             options.json + a weightless hdf5 skeleton         (maelmo_stateless_elmo)

`<key>` hashes the path string of the config that the copy stands for, so that a component finds its own copy
again at load from the same `config.json`. The configs list the folder in `include_in_archive`, which puts it
into the archive; `allennlp evaluate`/`predict` extract the archive and hand its directory to the components
as `serialization_dir`, where they find the copies.

Weights are never copied: a GLUE archive's `weights.th` already holds its encoder's weights, so at load the
encoder is only built (from the copy) and then overwritten. `holds_trained_weights` tells that case apart
from the start of a training run, where the encoder must read its pre-trained weights.
"""

import glob
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Optional

logger = logging.getLogger(__name__)

ASSETS_DIR = "maelmo_assets"

_warned_dirs: set[str] = set()


def asset_path(serialization_dir: str, kind: str, source: str) -> str:
    """Where the copy of `source` (a path string from the config) lives: `maelmo_assets/<kind>-<key>`."""
    key = hashlib.sha1(source.encode("utf-8")).hexdigest()[:12]
    return os.path.join(serialization_dir, ASSETS_DIR, f"{kind}-{key}")


def find_asset(serialization_dir: Optional[str], kind: str, source: str) -> Optional[str]:
    """The copy of `source` in `serialization_dir`, or None."""
    if serialization_dir is None:
        return None
    path = asset_path(serialization_dir, kind, source)
    return path if os.path.isdir(path) else None


def save_asset(
    serialization_dir: Optional[str], kind: str, source: str, write: Callable[[str], None]
) -> None:
    """
    Writes the copy of `source` with `write(directory)`, unless it exists. The folder appears whole or not at
    all (written aside, then renamed), so distributed workers that write the same copy at once do not clash.
    A directory that cannot be written (a read-only run directory) only costs the copy, with a warning.
    """
    if serialization_dir is None or find_asset(serialization_dir, kind, source) is not None:
        return
    target = asset_path(serialization_dir, kind, source)
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        staging = tempfile.mkdtemp(prefix=f".{kind}-", dir=os.path.dirname(target))
        try:
            write(staging)
            os.rename(staging, target)
        except OSError:
            if not os.path.isdir(target):  # not another worker's finished copy
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    except OSError as error:
        logger.warning("Could not copy %s into %s (%s): the archive will not hold it.", source, target, error)
        return
    _warn_unless_archived(serialization_dir)


def holds_trained_weights(serialization_dir: Optional[str]) -> bool:
    """
    Whether the model being built will be overwritten by weights from `serialization_dir`: an extracted
    archive (`weights.th`), a finished run directory (`best.th`), or a run resumed from a checkpoint
    (`model_state_e*_b*.th`). A new run has none of them: its encoders must read their pre-trained weights.
    """
    if serialization_dir is None:
        return False
    names = ("weights.th", "best.th")
    if any(os.path.exists(os.path.join(serialization_dir, name)) for name in names):
        return True
    return bool(glob.glob(os.path.join(serialization_dir, "model_state_e*_b*.th")))


def _warn_unless_archived(serialization_dir: str) -> None:
    """A config without `include_in_archive: ["maelmo_assets", ...]` trains an archive that cannot travel."""
    config_path = os.path.join(serialization_dir, "config.json")
    if serialization_dir in _warned_dirs or not os.path.exists(config_path):
        return
    _warned_dirs.add(serialization_dir)
    with open(config_path, encoding="utf-8") as config_file:
        include_in_archive = json.load(config_file).get("include_in_archive") or []
    if ASSETS_DIR not in include_in_archive:
        logger.warning(
            "%s: the config's include_in_archive lacks %r, so model.tar.gz will not hold the tokenizer and "
            "encoder files copied into %s, and will only load where the files it was trained from still "
            'are. Add "include_in_archive": %s to the config.',
            config_path,
            ASSETS_DIR,
            os.path.join(serialization_dir, ASSETS_DIR),
            json.dumps([ASSETS_DIR]),
        )
