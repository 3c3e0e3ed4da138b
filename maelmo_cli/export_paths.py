"""
Where an export (`maelmo-export`, Hugging Face or ONNX) may be written, checked before the archive is opened;
`maelmo_plugin/common/export_directory.py` writes it and says what `--force` may replace, and why. Standard
library only, so that the `maelmo` command refuses a bad output before it imports AllenNLP.
"""

import os

from maelmo_cli.checks import Refusal

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
    `Refusal`; a `FileNotFoundError` for a missing archive): see maelmo_plugin/common/export_directory.py.
    """
    if not os.path.exists(archive_file):
        raise FileNotFoundError(
            f"No such archive: {archive_file!r}. Give the model.tar.gz (or the serialization directory) of a "
            f"maelmo_masked_elmo_lm training run."
        )
    if os.path.islink(output_dir):
        raise Refusal(
            f"The output {output_dir!r} is a symbolic link: give the directory to write itself, a new one."
        )
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise Refusal(f"The output {output_dir!r} is a file: give a directory path.")
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
        raise Refusal(
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
        raise Refusal(
            f"The output directory {output_dir!r} is not empty and is not a previous export ({what}): "
            f"--force replaces only a previous export. Give a new directory."
        )
    if not force:
        raise Refusal(
            f"The output directory {output_dir!r} holds a previous export: give a new directory, or --force "
            f"(force=True) to replace it."
        )


def _within(path: str, directory: str) -> bool:
    """Whether `path` is `directory` or inside it (both real paths)."""
    return os.path.commonpath([path, directory]) == directory
