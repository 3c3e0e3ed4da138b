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

# Every top-level entry the exports write: the Hugging Face directory (Masked ELMo and BERT*), its
# sentence-transformers files, the ONNX model and the tokenizer files `save_pretrained` writes. A test checks
# that each kind of export writes no other name.
EXPORTED_MODELS = ("model.safetensors", "model.onnx")
EXPORT_NAMES = frozenset(
    {
        *EXPORTED_MODELS,
        "model.onnx.data",
        "model_int8.onnx",
        "model_int8.onnx.data",
        "config.json",
        "generation_config.json",
        "configuration_masked_elmo.py",
        "modeling_masked_elmo.py",
        "cpu_lstm_recurrence.py",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "vocab.txt",
        "README.md",
        "modules.json",
        "sentence_bert_config.json",
        "config_sentence_transformers.json",
        "1_Pooling",
        "1_WeightedLayerPooling",
        "2_Pooling",
    }
)


def check_export_paths(archive_file: str, output_dir: str, force: bool) -> None:
    """
    What every export refuses before it opens the archive, each in one line naming the path and the fix (a
    `ConfigurationError`; a `FileNotFoundError` for a missing archive): see the module's docstring.
    """
    if not os.path.exists(archive_file):
        raise FileNotFoundError(
            f"No such archive: {archive_file!r}. Give the model.tar.gz (or the serialization directory) of a "
            f"maelmo_masked_elmo_lm training run."
        )
    if os.path.islink(output_dir):
        raise ConfigurationError(
            f"The output {output_dir!r} is a symbolic link: give the directory to write itself, a new one."
        )
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise ConfigurationError(f"The output {output_dir!r} is a file: give a directory path.")
    target = os.path.realpath(output_dir)
    archive = os.path.realpath(archive_file)
    protected = {os.path.realpath(os.sep), os.path.realpath(os.path.expanduser("~"))}
    holds = (
        "the root or home folder"
        if target in protected
        else "the working directory"
        if _within(os.getcwd(), target)
        else "the archive being exported"
        if _within(archive, target)
        else None
    )
    if holds is not None:
        raise ConfigurationError(
            f"The output {output_dir!r} is {holds} or a folder holding it: an export needs a directory of its "
            f"own. Give a new directory, e.g. {os.path.join(output_dir, 'export')!r}."
        )
    if not os.path.isdir(output_dir) or not os.listdir(output_dir):
        return
    foreign = sorted(set(os.listdir(output_dir)) - EXPORT_NAMES)
    is_export = not foreign and any(name in EXPORTED_MODELS for name in os.listdir(output_dir))
    if not is_export:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        what = f"it holds {shown}, which no export writes" if foreign else "it holds no exported model"
        raise ConfigurationError(
            f"The output directory {output_dir!r} is not empty and is not a previous export ({what}): "
            f"--force replaces only a previous export. Give a new directory."
        )
    if not force:
        raise ConfigurationError(
            f"The output directory {output_dir!r} holds a previous export: give a new directory, or --force "
            f"(force=True) to replace it."
        )


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


def _within(path: str, directory: str) -> bool:
    """Whether `path` is `directory` or inside it (both real paths)."""
    return os.path.commonpath([path, directory]) == directory


def _apply_umask(directory: str) -> None:
    # mkdtemp (and safetensors) create private files: give the export the permissions of any new directory.
    umask = os.umask(0)
    os.umask(umask)
    for root, _directories, files in os.walk(directory):
        os.chmod(root, 0o777 & ~umask)
        for name in files:
            os.chmod(os.path.join(root, name), 0o666 & ~umask)
