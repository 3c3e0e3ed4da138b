"""
Where an export (`maelmo-export`, Hugging Face or ONNX) is written, and what it may replace.

An export is written into a temporary directory beside `OUT_DIR` and moved into place only once it is
complete and checked: a failed export leaves `OUT_DIR` as it was. `--force` replaces a *previous export*
only, never a directory the user filled: a directory is a previous export when every entry in it is a name
an export writes (`EXPORT_NAMES`) and it holds an exported model. Whatever else the directory holds (the
archive being exported, a checkout, `.git`, notes) is the user's, so the export is refused, naming it.
`.`, `..`, the home folder, a folder holding the working directory or the archive, and a symbolic link are
refused outright: an export goes into a directory of its own.
"""

import os
import shutil
import tempfile
from collections.abc import Callable

from allennlp.common.checks import ConfigurationError

from maelmo_cli import export_paths
from maelmo_cli.export_paths import EXPORT_NAMES, EXPORTED_MODELS  # noqa: F401  (re-exported)


def check_export_paths(archive_file: str, output_dir: str, force: bool) -> None:
    """
    What every export refuses before it opens the archive (`maelmo_cli.export_paths.check_export_paths`),
    with a `ConfigurationError`, or a `FileNotFoundError` for a missing archive.
    """
    try:
        export_paths.check_export_paths(archive_file, output_dir, force)
    except export_paths.Refusal as refusal:
        raise ConfigurationError(str(refusal)) from None


def write_into_place(output_dir: str, write: Callable[[str], None]) -> None:
    """
    `write(directory)` into a temporary directory beside `output_dir`, then moved into place once complete
    and checked, so a failed export leaves nothing behind. A previous export at `output_dir` (which
    `check_export_paths` let through) is moved aside first and removed only once the new one is in place.
    """
    parent = os.path.dirname(os.path.abspath(output_dir))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".maelmo-export-", dir=parent)
    previous = None
    try:
        write(staging)
        _apply_umask(staging)
        if os.path.isdir(output_dir):
            previous = tempfile.mkdtemp(prefix=".maelmo-export-previous-", dir=parent)
            os.rmdir(previous)
            os.replace(output_dir, previous)
        os.replace(staging, output_dir)
    except BaseException:
        if previous is not None and not os.path.exists(output_dir):
            os.replace(previous, output_dir)
            previous = None
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if previous is not None and os.path.isdir(previous):
            shutil.rmtree(previous, ignore_errors=True)


def _apply_umask(directory: str) -> None:
    # mkdtemp (and safetensors) create private files: give the export the permissions of any new directory.
    umask = os.umask(0)
    os.umask(umask)
    for root, _directories, files in os.walk(directory):
        os.chmod(root, 0o777 & ~umask)
        for name in files:
            os.chmod(os.path.join(root, name), 0o666 & ~umask)
