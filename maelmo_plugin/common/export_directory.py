"""
Where an export (`maelmo-export`, Hugging Face or ONNX) is written, and what it may replace.

An export is written into a temporary directory beside `OUT_DIR` and moved into place only once it is
complete and checked: a failed export leaves `OUT_DIR` as it was. What `--force` may replace is the rule of
every writing command (`maelmo_declarations/owned_outputs.py`): a previous export, proved by its manifest
(`.maelmo-output.json`, which lists every file the export wrote), and of it only the files listed. A folder of
the user's, another model's Hugging Face folder, the archive's own folder, `.`, the home folder and a link are
refused, `--force` included.
"""

import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any, Optional

from maelmo_declarations import export_paths, owned_outputs

logger = logging.getLogger(__name__)


def check_export_paths(archive_file: str, output_dir: str, force: bool) -> Optional[dict[str, Any]]:
    """
    What every export refuses before it opens the archive (`maelmo_declarations.export_paths.check_export_paths`),
    a `Refusal`. Returns the manifest of the previous export `force` replaces, or None.
    """
    return export_paths.check_export_paths(archive_file, output_dir, force)


def write_into_place(archive_file: str, output_dir: str, force: bool, write: Callable[[str], None]) -> None:
    """
    `write(directory)` into a temporary directory beside `output_dir`, then moved into place with its manifest
    once complete and checked, so a failed export leaves nothing behind. The paths are checked again here
    (`check_export_paths`), so that what is replaced is what the rule lets through at the moment of the move.
    """
    parent = os.path.dirname(os.path.abspath(output_dir))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".maelmo-export-", dir=parent)
    try:
        write(staging)
        _apply_umask(staging)
        previous = check_export_paths(archive_file, output_dir, force)
        left = owned_outputs.move_into_place(staging, output_dir, export_paths.COMMAND, previous)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    for path in left:
        logger.warning(
            "The previous export's folder held files its manifest does not list, written while this export ran: "
            "they are kept in %s.",
            path,
        )


def _apply_umask(directory: str) -> None:
    # mkdtemp (and safetensors) create private files: give the export the permissions of any new directory.
    umask = os.umask(0)
    os.umask(umask)
    for root, _directories, files in os.walk(directory):
        os.chmod(root, 0o777 & ~umask)
        for name in files:
            os.chmod(os.path.join(root, name), 0o666 & ~umask)
