"""
Archives and checkpoints that prove their integrity: the sha256 of each file, recorded when it is written and
checked when it is read.

Why: gzip's CRC and tarfile catch a damaged `model.tar.gz` only until someone re-packs it, and torch's zip
reader checks no CRC at all, so a byte flipped inside a tensor of `weights.th` (or of a checkpoint) was
loaded and served without a word. A sha256 recorded beside the bytes cannot be satisfied by damaged ones.

* **Archives.** `archive_model` (AllenNLP's, patched by `maelmo_plugin/compat.py`) first writes
  `maelmo_integrity.json` into the serialization directory, the sha256 of every member it will archive
  (config, weights, vocabulary, meta, `include_in_archive`), and archives it with them. `verify_extracted` checks
  an extracted archive against it: a member whose bytes differ, a listed member that is missing, or a member
  the list does not hold is one line naming the archive and the member. An archive written before this has no
  list: it loads, with one warning that it cannot be verified. The archive is written to a partial file and
  moved into place, so a `model.tar.gz` is whole or absent.
* **Checkpoints.** `maelmo_atomic` writes the sha256 of a checkpoint's two files into its `.done` marker, and
  a resumed run checks them before it loads (`checkpoint_mismatch`): a damaged checkpoint is set aside, with a
  warning naming it, and the one before it is used.
"""

import glob
import hashlib
import json
import logging
import os
from collections.abc import Iterable, Sequence
from typing import Any, Optional

logger = logging.getLogger(__name__)

ARCHIVE_MANIFEST = "maelmo_integrity.json"
FORMAT = 1
_MAX_MANIFEST_BYTES = 16 * 1024 * 1024
_warned_unverified: set[str] = set()


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def archive_members(
    serialization_dir: str, weights_file: str, include_in_archive: Optional[Sequence[str]]
) -> dict[str, str]:
    """
    {member name: path} of what AllenNLP's `archive_model` puts into `model.tar.gz`, files only: config.json,
    the weights as weights.th, vocabulary/, meta.json where it exists, and each `include_in_archive` glob.
    A test compares it with the members of an archive written by `allennlp train`.
    """
    members: dict[str, str] = {}

    def add(path: str, name: str) -> None:
        if os.path.isdir(path) and not os.path.islink(path):
            for entry in sorted(os.listdir(path)):
                add(os.path.join(path, entry), f"{name}/{entry}")
        elif os.path.isfile(path):
            members[name] = path

    add(os.path.join(serialization_dir, "config.json"), "config.json")
    add(weights_file, "weights.th")
    add(os.path.join(serialization_dir, "vocabulary"), "vocabulary")
    add(os.path.join(serialization_dir, "meta.json"), "meta.json")
    prefix = os.path.join(serialization_dir, "")
    for target in include_in_archive or ():
        for path in glob.glob(os.path.join(serialization_dir, target)):
            add(path, path[len(prefix) :])
    members.pop(ARCHIVE_MANIFEST, None)
    return members


def write_archive_manifest(
    serialization_dir: str, weights_file: str, include_in_archive: Optional[Sequence[str]]
) -> str:
    """Writes `ARCHIVE_MANIFEST` into `serialization_dir` (aside, then renamed); returns its path."""
    members = archive_members(serialization_dir, weights_file, include_in_archive)
    record = {"format": FORMAT, "sha256": {name: file_sha256(path) for name, path in sorted(members.items())}}
    path = os.path.join(serialization_dir, ARCHIVE_MANIFEST)
    with open(path + ".tmp", "w", encoding="utf-8") as stream:
        json.dump(record, stream, indent=1)
    os.replace(path + ".tmp", path)
    return path


def with_member_sha256(manifest: bytes, name: str, path: str) -> bytes:
    """An archive's `ARCHIVE_MANIFEST` (its bytes) with the member `name` now the file at `path`."""
    record = json.loads(manifest)
    record["sha256"][name] = file_sha256(path)
    return json.dumps(record, indent=1).encode("utf-8")


def verify_extracted(directory: str, archive_file: str) -> Optional[str]:
    """
    What is wrong with the archive `archive_file` extracted into `directory`, in one line naming it and the
    member (no config.json, a member not as archived), or None when every member is as written. An archive
    without a manifest is not verified (a warning says so, once per archive).
    """
    if not os.path.isfile(os.path.join(directory, "config.json")):
        return f"The model archive {archive_file} holds no config.json: it is not an archive `allennlp train` wrote."
    path = os.path.join(directory, ARCHIVE_MANIFEST)
    if not os.path.lexists(path):
        if archive_file not in _warned_unverified:
            _warned_unverified.add(archive_file)
            logger.warning(
                "%s has no %s (it was archived before version 0.2): its members cannot be verified.",
                archive_file,
                ARCHIVE_MANIFEST,
            )
        return None
    recorded = _read_manifest(path)
    if recorded is None:
        return f"The model archive {archive_file} holds a damaged {ARCHIVE_MANIFEST}: {_COPY_AGAIN}"
    present = _files(directory)
    for name, digest in sorted(recorded.items()):
        if name not in present:
            return f"The model archive {archive_file} lacks its member {name}, which its {ARCHIVE_MANIFEST} lists: {_COPY_AGAIN}"
        if file_sha256(os.path.join(directory, name)) != digest:
            return (
                f"The model archive {archive_file}'s member {name} is not what was archived (its sha256 differs "
                f"from the one {ARCHIVE_MANIFEST} records): it was damaged or changed since. {_COPY_AGAIN}"
            )
    unlisted = sorted(set(present) - set(recorded) - {ARCHIVE_MANIFEST})
    if unlisted:
        return (
            f"The model archive {archive_file} holds {unlisted[0]}, which its {ARCHIVE_MANIFEST} does not list: "
            f"it was changed since it was written. {_COPY_AGAIN}"
        )
    return None


_COPY_AGAIN = "copy it again from where it was written, or re-archive the run's best.th."


def _read_manifest(path: str) -> Optional[dict[str, str]]:
    try:
        if os.path.islink(path) or os.path.getsize(path) > _MAX_MANIFEST_BYTES:
            return None
        with open(path, encoding="utf-8") as stream:
            record = json.load(stream)
        digests = record["sha256"]
        valid = record.get("format") == FORMAT and isinstance(digests, dict)
        valid = valid and all(
            isinstance(name, str) and isinstance(value, str) for name, value in digests.items()
        )
    except (OSError, ValueError, KeyError, TypeError, RecursionError, AttributeError):
        return None
    return dict(digests) if valid else None


def _files(directory: str) -> set[str]:
    return {
        os.path.relpath(os.path.join(parent, name), directory).replace(os.sep, "/")
        for parent, _folders, names in os.walk(directory)
        for name in names
    }


def checkpoint_digests(paths: Iterable[str]) -> dict[str, str]:
    """{file name: sha256} of a checkpoint's files, for its marker."""
    return {os.path.basename(path): file_sha256(path) for path in paths}


def checkpoint_mismatch(marker: str, paths: Iterable[str]) -> Optional[str]:
    """
    The first of `paths` whose sha256 is not the one the checkpoint's `marker` records, or None (also for a
    marker written before markers held digests: empty, so nothing to check).
    """
    try:
        with open(marker, encoding="utf-8") as stream:
            text = stream.read(_MAX_MANIFEST_BYTES)
    except OSError:
        return None
    if not text.strip():
        return None
    try:
        recorded: Any = json.loads(text)
    except (ValueError, RecursionError):
        return marker
    for path in paths:
        digest = recorded.get(os.path.basename(path)) if isinstance(recorded, dict) else None
        # A file gone since (the marker says it was written) is as damaged as one whose bytes changed.
        if digest is None or not os.path.isfile(path) or file_sha256(path) != digest:
            return path
    return None


def sign_archives() -> None:
    """
    Patches AllenNLP's `archive_model` (in `allennlp.models.archival`, and where `allennlp train` imported it) so
    that every archive carries `ARCHIVE_MANIFEST`. Applied by `maelmo_plugin/compat.py` at import.
    """
    from allennlp.commands import train
    from allennlp.models import archival

    original = archival.archive_model
    if getattr(original, "_maelmo_signed", False):
        return

    def archive_model(
        serialization_dir: Any,
        weights: str = archival._DEFAULT_WEIGHTS,
        archive_path: Any = None,
        include_in_archive: Optional[list[str]] = None,
    ) -> str:
        directory = os.fspath(serialization_dir)
        weights_file = weights if os.path.isabs(weights) else os.path.join(directory, weights)
        if os.path.isfile(weights_file) and os.path.isfile(os.path.join(directory, archival.CONFIG_NAME)):
            write_archive_manifest(directory, weights_file, include_in_archive)
            include_in_archive = [*(include_in_archive or []), ARCHIVE_MANIFEST]
        # else: AllenNLP's own error, naming the missing file
        # Written whole or not at all: AllenNLP tars straight into the target, and a run stopped while it archives
        # would leave a truncated model.tar.gz beside a finished metrics.json, which a resuming job takes for done.
        target = os.fspath(archive_path) if archive_path is not None else directory
        if os.path.isdir(target):
            target = os.path.join(target, "model.tar.gz")
        partial = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.partial")
        try:
            original(serialization_dir, weights, partial, include_in_archive)
            os.replace(partial, target)
        except BaseException:
            if os.path.exists(partial):
                os.remove(partial)  # ours: nothing half-written is left behind
            raise
        return target

    archive_model._maelmo_signed = True  # type: ignore[attr-defined]  # why: a marker read back above
    archival.archive_model = archive_model
    train.archive_model = archive_model  # train.py imported the name itself
