"""
The baselines `embedding_throughput.py` times against the plugin, with random weights (the speed does not
depend on them): AllenNLP's `Elmo` with the original 2 x 4096 / 512 options, and Flair's `FlairEmbeddings`, a
forward and a backward character language model of Flair's default size. Flair is no dependency of the plugin:
`embedding_throughput.py`'s docstring says how to install it beside.
"""

import sys
from collections.abc import Callable

import common
import torch

sys.path.insert(0, common.REPOSITORY)
from tests.fixtures.elmo import write_elmo  # noqa: E402

Embed = Callable[[list[str]], object]

# AllenNLP's elmo_2x4096_512_2048cnn_2xhighway_options.json, the original ELMo.
ORIGINAL_ELMO_OPTIONS = {
    "lstm": {
        "use_skip_connections": True,
        "projection_dim": 512,
        "cell_clip": 3,
        "proj_clip": 3,
        "dim": 4096,
        "n_layers": 2,
    },
    "char_cnn": {
        "activation": "relu",
        "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]],
        "n_highway": 2,
        "embedding": {"dim": 16},
        "n_characters": 262,
        "max_characters_per_token": 50,
    },
}
# Flair's news-forward/backward language models: 1 layer of 2048, 100-d characters, 275 characters.
FLAIR_HIDDEN, FLAIR_LAYERS, FLAIR_CHARACTER_DIM, FLAIR_CHARACTERS = 2048, 1, 100, 275


def allennlp_elmo(directory: str, device: torch.device) -> Embed:
    """AllenNLP's `Elmo` with the original options and random weights; words split at spaces."""
    from allennlp.modules.elmo import Elmo, batch_to_ids

    options_file, weight_file = write_elmo(directory, ORIGINAL_ELMO_OPTIONS)
    elmo = Elmo(options_file, weight_file, num_output_representations=1, dropout=0.0).eval().to(device)

    def embed(batch: list[str]):
        with torch.no_grad():
            characters = batch_to_ids([sentence.split() for sentence in batch]).to(device)
            return elmo(characters)["elmo_representations"]

    return embed


def flair_embeddings() -> Embed:
    """Flair's `FlairEmbeddings`, forward and backward, stacked as Flair's taggers use them."""
    from flair.data import Dictionary, Sentence
    from flair.embeddings import FlairEmbeddings, StackedEmbeddings
    from flair.models import LanguageModel

    characters = Dictionary(add_unk=True)
    for code in range(32, 32 + 4 * FLAIR_CHARACTERS):
        if len(characters) == FLAIR_CHARACTERS:
            break
        if chr(code).isprintable():
            characters.add_item(chr(code))
    models = [
        LanguageModel(
            characters,
            is_forward_lm=forward,
            hidden_size=FLAIR_HIDDEN,
            nlayers=FLAIR_LAYERS,
            embedding_size=FLAIR_CHARACTER_DIM,
            has_decoder=False,
        )
        for forward in (True, False)
    ]
    embeddings = StackedEmbeddings([FlairEmbeddings(model) for model in models]).eval()

    def embed(batch: list[str]):
        sentences = [Sentence(sentence) for sentence in batch]
        embeddings.embed(sentences)
        return sentences

    return embed
