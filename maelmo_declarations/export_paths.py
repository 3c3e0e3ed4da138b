"""
Where an export (`maelmo-export`, Hugging Face or ONNX) may be written, checked before the archive is opened:
the rule every writing command follows (`maelmo_declarations/owned_outputs.py`), with the archive as the input.
`maelmo_plugin/common/export_directory.py` writes the export. Standard library only, so that the `maelmo`
command refuses a bad output before it imports AllenNLP.
"""

import os
from typing import Any, Optional

from maelmo_declarations.owned_outputs import check_output
from maelmo_declarations.refusals import Refusal

COMMAND = "maelmo-export"


def check_export_paths(archive_file: str, output_dir: str, force: bool) -> Optional[dict[str, Any]]:
    """
    What every export refuses before it opens the archive, each in one line naming the path and the fix (a
    `Refusal`). Returns the manifest of the previous export that
    `force` replaces, or None.
    """
    if not os.path.exists(archive_file):
        raise Refusal(
            f"No such archive: {archive_file!r}. Give the model.tar.gz (or the serialization directory) of a "
            f"maelmo_masked_elmo_lm training run."
        )
    return check_output(output_dir, COMMAND, force, inputs=[archive_file], option="The output directory")
