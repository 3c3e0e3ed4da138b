"""
One way to open a language model, for everything that takes one (the `maelmo_masked_elmo_embedder` and
`maelmo_masked_elmo_mismatched_embedder`, `maelmo_plugin.api.MaskedElmo`, `allennlp maelmo-embed`): a `model.tar.gz`, a
serialization directory, or a Hugging Face export of Masked ELMo (written by `allennlp maelmo-export`, or a
model from elsewhere in that format, read back as the plugin's `maelmo_masked_elmo_lm`).

An export holds what the plugin needs: the sizes in `config.json`, the weights in `model.safetensors`, and
the tokenizer files, whose vocabulary becomes the model's `wordpieces` namespace. The table between the
plugin's tensor names and the export's (`hf_names`) lives here too, so that `maelmo_plugin.hf` (which writes
exports) and `maelmo_plugin.lm` (which reads them) depend on this module and not on each other.
"""

import json
import logging
import os
from collections.abc import Callable
from typing import Optional

import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path
from allennlp.data import Vocabulary
from allennlp.models import Model, archival
from allennlp.models.archival import Archive, load_archive
from safetensors.torch import load_file

from maelmo_plugin.common.archive_assets import ASSETS_DIR, holds_trained_weights
from maelmo_plugin.common.wordpiece import WordpieceTokenizer, WordpieceVocabulary
from maelmo_plugin.lm.dataset_readers.mlm_corpus import MlmCorpusReader
from maelmo_plugin.lm.models.masked_elmo_lm import MaskedElmoLanguageModel
from maelmo_plugin.lm.models.wordpiece_lm import WordpieceLanguageModel

logger = logging.getLogger(__name__)

MODEL_TYPE = "masked_elmo"
WEIGHTS_NAME = "model.safetensors"
# The tensors of the sequence- and token-classification heads, around the encoder (masked_elmo.*).
HEAD_PREFIXES = ("scalar_mix.", "classifier.")


def is_export(path: str) -> bool:
    """Whether `path` is a directory in the export's format (`config.json` with model_type masked_elmo)."""
    config_path = os.path.join(path, "config.json")
    if not os.path.isdir(path) or not os.path.isfile(config_path):
        return False
    with open(config_path, encoding="utf-8") as config_file:
        return json.load(config_file).get("model_type") == MODEL_TYPE


def load_export(directory: str) -> tuple[MaskedElmoLanguageModel, Params]:
    """
    The export in `directory` as a `maelmo_masked_elmo_lm` (in eval mode), and the `model` config that builds its
    architecture (what a GLUE archive keeps of the language model it was fine-tuned from).
    """
    with open(os.path.join(directory, "config.json"), encoding="utf-8") as config_file:
        config = json.load(config_file)
    model_params = Params(
        {
            "type": "maelmo_masked_elmo_lm",
            "encoder": {
                "type": "maelmo_masked_elmo",
                "input_dim": config["hidden_size"],
                "cells": config["cell_size"],
                "num_layers": config["num_hidden_layers"],
                "dropout": config["hidden_dropout_prob"],
            },
        }
    )
    vocab = WordpieceVocabulary.from_wordpiece_vocab(directory)
    if vocab.get_vocab_size("wordpieces") != config["vocab_size"]:
        raise ConfigurationError(
            f"The tokenizer in {directory} has {vocab.get_vocab_size('wordpieces')} word-pieces but "
            f"config.json says vocab_size {config['vocab_size']}: the export's files do not belong together."
        )
    model = Model.from_params(vocab=vocab, params=model_params.duplicate())
    assert isinstance(model, MaskedElmoLanguageModel)  # the type model_params name
    weights_path = os.path.join(directory, WEIGHTS_NAME)
    if not os.path.isfile(weights_path):
        raise ConfigurationError(
            f"{directory} has no {WEIGHTS_NAME}: only safetensors weights are read (a pickle file can run "
            f"code when it is loaded). Save the model with save_pretrained(..., safe_serialization=True)."
        )
    model.load_state_dict(_plugin_state_dict(load_file(weights_path), model, directory))
    return model.eval(), model_params


def load_export_archive(directory: str, cuda_device: int = -1) -> Archive:
    """The export as an AllenNLP `Archive`: the model, and a corpus reader with the export's tokenizer."""
    model, model_params = load_export(directory)
    if cuda_device >= 0:
        model.cuda(cuda_device)
    reader = MlmCorpusReader(tokenizer=WordpieceTokenizer(vocab=directory))
    config = Params({"model": model_params.as_dict(), "dataset_reader": {"type": "maelmo_mlm_corpus"}})
    return Archive(
        model=model, config=config, dataset_reader=reader, validation_dataset_reader=reader, meta=None
    )


def load_language_model_archive(path: str, cuda_device: int = -1) -> Archive:
    """A `model.tar.gz` (or serialization directory) through AllenNLP's `load_archive`, or an export."""
    if is_export(path):
        return load_export_archive(path, cuda_device)
    return load_archive(path, cuda_device=cuda_device)


def _plugin_state_dict(
    state: dict[str, torch.Tensor], model: MaskedElmoLanguageModel, directory: str
) -> dict[str, torch.Tensor]:
    """The export's tensors under the plugin's names: `hf_names` inverted."""
    # The base model alone (AutoModel's save_pretrained) has no prefix and no decoder.
    prefix = "masked_elmo."
    if not any(name.startswith(prefix) for name in state):
        state = {prefix + name: tensor for name, tensor in state.items()}
    # A task model fine-tuned with Trainer: its encoder serves (GLUE, tagging), its head does not.
    head = sorted(name for name in state if name.startswith(HEAD_PREFIXES))
    if head:
        logger.info("%s is a task model: its encoder is read, its head %s left out.", directory, head)
        state = {name: tensor for name, tensor in state.items() if name not in head}
    # The first export name of each plugin tensor; the second of the embedding is the tied decoder weight.
    plugin_names = {hf_names(name)[0]: name for name in model.state_dict()}
    # A saved tied decoder weight is the embedding itself: safetensors keeps only one of them.
    state.pop("decoder.weight", None)
    if "decoder.bias" not in state:
        logger.warning(
            "%s has no masked-LM decoder bias (a base or task model): it is set to zero.", directory
        )
        state["decoder.bias"] = torch.zeros(model.vocab.get_vocab_size("wordpieces"))
    unknown = sorted(set(state) - set(plugin_names))
    missing = sorted(set(plugin_names) - set(state))
    if unknown or missing:
        raise ConfigurationError(
            f"{directory}/{WEIGHTS_NAME} does not hold a Masked ELMo of config.json's sizes: unknown tensors "
            f"{unknown[:5]}, missing tensors {missing[:5]}."
        )
    return {plugin_names[hf_name]: tensor for hf_name, tensor in state.items()}


def hf_names(name: str) -> list[str]:
    """
    The names in `MaskedElmoForMaskedLM` of the plugin's tensor `name`: two for the embedding, which is also
    the tied decoder. `load_export` reads an export back through the same table.
    """
    if name == "_embedding.weight":
        return ["masked_elmo.embeddings.weight", "decoder.weight"]
    if name == "_output_bias":
        return ["decoder.bias"]
    if name.startswith("_encoder.layers."):
        return ["masked_elmo." + name.removeprefix("_encoder.")]
    raise ConfigurationError(f"The Masked ELMo model has a parameter {name!r} that the export does not map.")


def open_language_model(
    archive_file: str, reinitialize: bool, serialization_dir: Optional[str]
) -> tuple[Model, Params]:
    """
    The archive's model and its config's `model` section, without its dataset readers: `load_archive` would
    also rebuild the pre-training reader, whose word-piece vocabulary path may point where pre-training ran.
    """
    try:
        resolved = cached_path(archive_file)
    except FileNotFoundError as error:
        hint = ""
        if holds_trained_weights(serialization_dir):
            hint = (
                f" The model in {serialization_dir} holds no copy of its language model in {ASSETS_DIR}/: "
                f"its config lacks include_in_archive: [{ASSETS_DIR!r}], as configs written before "
                f"self-contained archives do. Load it with MAELMO_LM_ARCHIVE (or the embedder's "
                f"archive_file) set to the language model it was fine-tuned from."
            )
        message = f"The language model archive {archive_file} does not exist.{hint}"
        raise ConfigurationError(message) from error
    model: Model
    if is_export(resolved):
        model, model_params = load_export(resolved)
        if reinitialize:
            model = Model.from_params(vocab=model.vocab, params=model_params.duplicate())
        return model, model_params
    if os.path.isdir(resolved):
        model, config = _load_from_directory(resolved)
    else:
        # Through the module, so that the checked extraction of maelmo_plugin.compat applies.
        with archival.extracted_archive(resolved) as directory:
            model, config = _load_from_directory(directory)
    if reinitialize:
        model = Model.from_params(vocab=model.vocab, params=config.get("model").duplicate())
    return model, config.get("model")


def _load_from_directory(serialization_dir: str) -> tuple[Model, Params]:
    config = Params.from_file(os.path.join(serialization_dir, archival.CONFIG_NAME))
    weights = archival.get_weights_path(serialization_dir)
    return Model.load(config.duplicate(), serialization_dir, weights_file=weights), config


def copy_writer(language_model: Model, model_params: Params) -> Callable[[str], None]:
    """Writes what rebuilds the language model: its config's `model` section and its vocabulary."""

    def write(directory: str) -> None:
        Params({"model": model_params.as_dict(quiet=True)}).to_file(
            os.path.join(directory, archival.CONFIG_NAME)
        )
        language_model.vocab.save_to_files(os.path.join(directory, "vocabulary"))

    return write


def build_from_copy(directory: str) -> WordpieceLanguageModel:
    """The language model's architecture from its copy, with untrained weights (the caller loads them)."""
    config = Params.from_file(os.path.join(directory, archival.CONFIG_NAME))
    vocab = Vocabulary.from_files(os.path.join(directory, "vocabulary"))
    model = Model.from_params(vocab=vocab, params=config.get("model"))
    # The embedders copy only the language models they accept.
    if not isinstance(model, WordpieceLanguageModel):
        raise ConfigurationError(
            f"{directory} holds a {type(model).__name__}, not a word-piece language model."
        )
    return model
