"""
The configs that travel with the package: `training_config/` (and the sample corpus the small configs train
on), found at the top of a checkout or, in an installed wheel, as `maelmo_plugin/training_config/` (setup.py
copies it there). `maelmo train lm/pretrain_small -s runs/sample` reads the packaged file from any directory;
an existing file is always taken as it is, so that a user's own config or variant wins over a packaged name.

Standard library only: the `maelmo` command resolves a config name before it imports AllenNLP.
"""

import os
import sys
from pathlib import Path
from typing import Optional

_PACKAGE = Path(__file__).resolve().parents[1] / "maelmo_plugin"
SUFFIXES = (".jsonnet", ".json")


def config_root() -> Optional[Path]:
    """The folder of the packaged configs: the wheel's copy, else the checkout's; None if neither is there."""
    for root in (_PACKAGE / "training_config", _PACKAGE.parent / "training_config"):
        if (root / "lm" / "pretrain_common.libsonnet").is_file():
            return root
    return None


def packaged_names() -> list[str]:
    """The runnable configs' names as `maelmo train` takes them (`lm/pretrain_small`), sorted."""
    root = config_root()
    if root is None:
        return []
    return sorted(str(path.relative_to(root).with_suffix("")) for path in root.rglob("*.jsonnet"))


def packaged_config(name: str) -> Optional[Path]:
    """
    The packaged file that `name` (`lm/pretrain_small`, with or without `.jsonnet`) names, or None. A name that
    leads out of the configs' folder (`..`, an absolute path, a link out) names none.
    """
    root = config_root()
    if root is None or not name or Path(name).is_absolute():
        return None
    candidate = root / (name if name.endswith(SUFFIXES) else name + ".jsonnet")
    try:
        resolved = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not resolved.is_file() or not resolved.is_relative_to(root.resolve()):
        return None
    return candidate


def resolve_config_argument(argument: str) -> str:
    """
    A config argument as given when it is an existing path or a URL (AllenNLP fetches those), else the packaged
    file it names. Raises ValueError, naming the packaged configs, when it is neither.
    """
    if argument and Path(argument).is_dir():
        raise ValueError(
            f"{argument} is a directory: give a config file (.jsonnet or .json), or a packaged config's name"
        )
    if argument and (Path(argument).exists() or "://" in argument):
        return argument
    packaged = packaged_config(argument)
    if packaged is None:
        names = packaged_names()
        raise ValueError(
            f"{argument}: no such file, and no packaged config of that name"
            + (f" (the package has {', '.join(names)})" if names else "")
        )
    return str(packaged)


# Options of `allennlp train` and `maelmo-config` that take a value: the config is the first other argument.
_OPTIONS_WITH_VALUES = frozenset(
    {"-s", "--serialization-dir", "-o", "--overrides", "--node-rank", "--include-package"}
)


def resolve_in_command_line(argv: list[str]) -> list[str]:
    """
    `argv` (without the program name) with the config of a `train` or `maelmo-config` command resolved by
    `resolve_config_argument`; any other command's arguments unchanged.
    """
    if argv[:1] not in (["train"], ["maelmo-config"]):
        return argv
    resolved = list(argv)
    index = 1
    while index < len(resolved):
        token = resolved[index]
        if token == "--":
            index += 1
            break
        if token in _OPTIONS_WITH_VALUES:
            index += 2
            continue
        if token.startswith("-"):
            index += 1
            continue
        break
    if index < len(resolved):
        resolved[index] = resolve_config_argument(resolved[index])
    return resolved


def with_packaged_config(argv: list[str]) -> list[str]:
    """`argv` with a packaged config's name resolved (`resolve_in_command_line`); exits 2 on a name that is none."""
    try:
        return resolve_in_command_line(argv)
    except ValueError as error:
        print(f"maelmo: error: {error}", file=sys.stderr)
        sys.exit(2)


def main() -> None:
    """`python -m maelmo_declarations.packaged_configs`: where the packaged configs are, and their names, to copy one."""
    try:
        print(f"# {config_root()}")
        print("\n".join(packaged_names()), flush=True)
    except BrokenPipeError:
        # Piped into `head`, which stops reading: the listing was wanted only in part. Python would report the
        # pipe again while flushing at exit; point stdout at nothing first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    main()
