"""
What `-f` may replace in `allennlp train` and under torchrun: a training run's folder, by the rule of every
writing command (`maelmo_declarations/owned_outputs.py`), never a folder of the user's.

AllenNLP's `-f` removes whatever folder `-s` names (`shutil.rmtree`), so `-s ~/thesis -f` deleted a thesis.
Here a run claims its folder when it creates it (or finds it empty): a manifest naming `allennlp train`,
marked unfinished, since a run keeps writing into it (checkpoints, logs, metrics) and everything in a folder
it claimed empty is its own. `-f` then replaces a folder only when that claim is there; a folder without it
(the user's, or a run of a version before the claim) is refused in one line, and so are `/`, the home folder,
a folder holding the working directory, and a link. A folder the run's config reads from (its data, its
vocabulary) is an input: refused too.
"""

import glob
import os
import shutil
from collections.abc import Sequence
from typing import Any, Optional

from allennlp.common.checks import ConfigurationError

from maelmo_declarations import owned_outputs
from maelmo_declarations.refusals import Refusal, check_serialization_dir
from maelmo_plugin import compat

COMMAND = "allennlp train"


def check_force(serialization_dir: str, inputs: Sequence[str] = ()) -> Optional[dict[str, Any]]:
    """Whether `-f` may replace the folder (a `Refusal` if not): the manifest of the run it replaces, or None."""
    return owned_outputs.check_output(
        serialization_dir,
        COMMAND,
        True,
        inputs=inputs,
        option="The serialization directory (-s)",
        force_flag="-f",
    )


def remove_for_force(serialization_dir: str, inputs: Sequence[str] = ()) -> None:
    """What `-f` does: the previous run's folder goes, once the rule lets it; anything else is refused."""
    manifest = check_force(serialization_dir, inputs)
    if manifest is None:
        return  # new, or empty
    if manifest.get("complete", True):
        owned_outputs.remove_listed(serialization_dir, manifest)
    else:
        # A run's folder, claimed empty: all it holds is the run's. rmtree removes links, never follows them.
        shutil.rmtree(serialization_dir)


def config_inputs(params: Any) -> list[str]:
    """The paths a config reads (its data paths, vocabularies, archives) that exist: the run's inputs."""
    flat = params.as_flat_dict() if hasattr(params, "as_flat_dict") else {}
    reads = ("_data_path", "vocab", "archive", "_file", "_path")
    return [
        value
        for key, value in flat.items()
        if isinstance(value, str)
        and value
        and key.rsplit(".", 1)[-1].endswith(reads)
        and os.path.exists(value)
    ]


def claim(serialization_dir: str) -> None:
    """Marks a folder this run created, or found empty, as the run's (`remove_for_force` reads it)."""
    if os.path.isdir(serialization_dir) and not os.listdir(serialization_dir):
        owned_outputs.write_manifest(serialization_dir, COMMAND, files=[], complete=False)


def guard_force() -> None:
    """
    Patches AllenNLP's `create_serialization_dir`, which `allennlp train` and torchrun's workers call through its
    module: `-s` a file refused in one line, `-f` by the rule above, and a new folder claimed. Applied by `maelmo_plugin/compat.py` at import.
    """
    from allennlp.training import util

    original = util.create_serialization_dir
    if getattr(original, "_maelmo_guarded", False):
        return

    def create_serialization_dir(params: Any, serialization_dir: Any, recover: bool, force: bool) -> None:
        directory = os.fspath(serialization_dir)
        check_serialization_dir(
            directory
        )  # AllenNLP (and torchrun's workers) met it as a NotADirectoryError traceback
        if force and not recover:
            remove_for_force(directory, config_inputs(params))
        original(params, serialization_dir, recover, force)
        if not recover:
            claim(directory)

    create_serialization_dir._maelmo_guarded = True  # type: ignore[attr-defined]  # why: read back above
    util.create_serialization_dir = create_serialization_dir


def remove_the_folder_of_a_refused_run() -> None:
    """
    `allennlp train` creates its serialization directory (config, logs, vocabulary) before it builds the model,
    so a config refused while it is built (a `ConfigurationError` or a `Refusal`: a wrong archive to continue, a
    bad size) left
    the folder behind, and the corrected command then needed `-f`. Here, a folder that did not exist (or was
    empty) before the command, and holds no weights or epoch metrics, is removed when the run is refused: it
    holds only what this run wrote, before it trained. Any other folder is left as it is.
    """
    from allennlp.commands import train

    if compat._is_patched(train.train_model):
        return
    original = train.train_model

    def train_model(params, serialization_dir, *args, **kwargs):
        directory = os.fspath(serialization_dir)
        new = not os.path.lexists(directory) or (os.path.isdir(directory) and not os.listdir(directory))
        try:
            return original(params, serialization_dir, *args, **kwargs)
        except (ConfigurationError, Refusal):
            # Weights or an epoch's metrics: the run trained, and what it wrote is kept.
            checkpoints = glob.glob(os.path.join(directory, "*.th")) + glob.glob(
                os.path.join(directory, "metrics_epoch_*.json")
            )
            if new and os.path.isdir(directory) and not os.path.islink(directory) and not checkpoints:
                shutil.rmtree(directory, ignore_errors=True)
            raise

    compat._patch(train, "train_model", train_model)
