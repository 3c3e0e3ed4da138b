"""
What changed between two fingerprints of an embedding job (`maelmo_plugin/embedding/fingerprint.py`: what
decides the vectors), in words: a partial output resumed by another run, a shard of another run given to
`maelmo-merge`.
"""

from typing import Any


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
