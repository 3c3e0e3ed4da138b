import os
import shutil
from typing import Optional

import h5py
import torch
from allennlp.common.file_utils import cached_path
from allennlp.modules.token_embedders import ElmoTokenEmbedder, TokenEmbedder

from maelmo_plugin.common.archive_assets import find_asset, holds_trained_weights, save_asset

OPTIONS_NAME = "options.json"
SKELETON_NAME = "weights_skeleton.hdf5"


@TokenEmbedder.register("maelmo_stateless_elmo")
class StatelessElmoTokenEmbedder(ElmoTokenEmbedder):
    """
    AllenNLP's `elmo_token_embedder` (the original ELMo, from its options and hdf5 weights) with its biLM's
    LSTM states reset before every batch, as jiant does for GLUE: AllenNLP's `ElmoLstm` is stateful and
    would otherwise carry the last batch's states into unrelated sentences, which makes a sentence's
    representation depend on the batch before it (and on batch order).

    In training, the options file and a weightless skeleton of the hdf5 file (its datasets' names, shapes
    and types, a few KB) are copied into the run's `maelmo_assets/`. A model loaded from its archive (or
    resumed from a checkpoint) builds ELMo from that copy, whose datasets read as zeros, and then gets the
    weights from its own weights file: the options and hdf5 files are not needed again.

    Registered as a `TokenEmbedder` with name "maelmo_stateless_elmo". It takes the parameters of
    `ElmoTokenEmbedder` (options_file, weight_file, do_layer_norm, dropout, requires_grad, ...), and
    `serialization_dir`, which AllenNLP gives (not set in configs).
    """

    def __init__(
        self, options_file: str, weight_file: str, serialization_dir: Optional[str] = None, **kwargs
    ) -> None:
        source = f"{options_file} {weight_file}"
        copy = find_asset(serialization_dir, "elmo", source)
        if copy is not None and holds_trained_weights(serialization_dir):
            options_file, weight_file = os.path.join(copy, OPTIONS_NAME), os.path.join(copy, SKELETON_NAME)
        super().__init__(options_file=options_file, weight_file=weight_file, **kwargs)
        save_asset(
            serialization_dir, "elmo", source, lambda directory: _copy(options_file, weight_file, directory)
        )

    def forward(self, elmo_tokens: torch.Tensor, word_inputs: Optional[torch.Tensor] = None) -> torch.Tensor:
        self._elmo._elmo_lstm._elmo_lstm.reset_states()  # type: ignore[has-type]  # why: allennlp assigns Elmo._elmo_lstm under its own type: ignore, which leaves mypy no type
        return super().forward(elmo_tokens, word_inputs)  # type: ignore[arg-type]  # why: allennlp defaults word_inputs to None but annotates it torch.Tensor


def _copy(options_file: str, weight_file: str, directory: str) -> None:
    shutil.copyfile(cached_path(options_file), os.path.join(directory, OPTIONS_NAME))
    write_weight_skeleton(cached_path(weight_file), os.path.join(directory, SKELETON_NAME))


def write_weight_skeleton(weight_file: str, skeleton_file: str) -> None:
    """
    Copies the tree of an ELMo hdf5 file without its values: HDF5 allocates a dataset's storage at its first
    write, so unwritten datasets take no space and read as their fill value, 0. AllenNLP's ELMo builds the
    same modules from it as from the real file.
    """
    with h5py.File(weight_file, "r") as source, h5py.File(skeleton_file, "w") as skeleton:

        def copy_node(name: str, node) -> None:
            if isinstance(node, h5py.Dataset):
                skeleton.create_dataset(name, shape=node.shape, dtype=node.dtype)

        source.visititems(copy_node)
