"""
The fingerprint of an embedding job: what decides its vectors, bit for bit, which a partial output records
(`job.py`) and a shard's record carries (`maelmo_files/embedding/shards.py`): the input's content (sha256),
the model (its weights' sha256, the same whether the run was started by the command or from Python), the
options (layer, pool, precision, batch size and window, which decide each batch's sentences), the device kind
and the torch and plugin versions. `maelmo_files/embedding/differences.py` says in words what changed between
two.
"""

import hashlib
import os
from typing import Any, Optional

import torch

from maelmo_plugin.common.integrity import file_sha256
from maelmo_plugin.version import VERSION

FORMAT = 2  # of job.json; 2 identifies the model by its weights wherever the run started


def weights_fingerprint(model: torch.nn.Module) -> dict[str, Any]:
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode("utf-8"))
        digest.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return {"weights_sha256": digest.hexdigest()}


def job_fingerprint(
    input_file: str, model: Optional[dict[str, Any]], options: dict[str, Any]
) -> dict[str, Any]:
    """What the vectors depend on; `model` None until it is loaded (`EmbeddingJob.set_model`)."""
    return {
        "format": FORMAT,
        "input": {"sha256": file_sha256(input_file), "size": os.path.getsize(input_file)},
        "model": model,
        "options": options,
        "torch": torch.__version__,
        "maelmo_plugin": VERSION,
    }
