"""
The fingerprint of an embedding job: what decides its vectors, bit for bit, which a partial output records
(`job.py`) and a shard's record carries (`shards.py`): the input's content (sha256), the model (its weights'
sha256, the same whether the run was started by the command or from Python), the options (layer, pool,
precision, batch size and window, which decide each batch's sentences), the device kind and the torch and
plugin versions. `differences` says in words what changed between two.
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


def differences(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """What differs between two fingerprints, in words: "the model", "batch_size: 4 then, 8 now"."""
    names = {"input": "the input's content", "model": "the model"}
    changed = []
    for key in sorted(set(recorded) | set(current)):
        before, now = recorded.get(key), current.get(key)
        if key == "options" and isinstance(before, dict) and isinstance(now, dict):
            for option in sorted(set(before) | set(now)):
                if before.get(option) != now.get(option):
                    then, now_shown = (_shown(option, values.get(option)) for values in (before, now))
                    changed.append(f"{option}: {then} then, {now_shown} now")
        elif before != now:
            changed.append(
                names.get(key, key) + (f": {before!r} then, {now!r} now" if key not in names else "")
            )
    return changed


# What an option's None means, in messages: `--layer` not given is every layer; `--pool` not given, no pooling;
# `--storage` not recorded, float32.
_NONE_SHOWN = {"layer": "all", "pool": "none", "scalar_mix_parameters": "default", "storage": "'float32'"}


def _shown(option: str, value: Any) -> str:
    return _NONE_SHOWN.get(option, "None") if value is None else repr(value)
