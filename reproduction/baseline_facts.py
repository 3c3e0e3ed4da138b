"""
What each arena encoder is, for the report's baselines table: its parameters (all of them, the tied word-piece
embedding included, with the vocabulary it trains with) and embedding size, and the word-frequency floor of the
validation text (maelmo_plugin/arena/unigram_floor.py), which a model must beat to have learned anything from context.
reproduction.runner writes them to reproduction/results/arena_encoders/baselines.json when the
arena_encoders campaign starts.

    WIKITEXT2_DIR=... MAELMO_VOCAB=... .venv/bin/python -m reproduction.baseline_facts
"""

import json
from pathlib import Path

import torch
from allennlp.common import Params

import maelmo_plugin  # noqa: F401  registers the models' type names
from maelmo_plugin.arena.parameters import built, counted
from maelmo_plugin.arena.unigram_floor import unigram_floor
from maelmo_plugin.lm.models.wordpiece_lm import WordpieceLanguageModel
from reproduction import REPOSITORY, RESULTS
from reproduction.arena import ARENA_ENCODERS
from reproduction.data import data_files

CONFIGS = REPOSITORY / "training_config" / "lm"


def parameters(config: str, vocab: str) -> dict:
    """The model of training_config/lm/`config` with the word-piece vocabulary `vocab`: its parameter counts."""
    model = built(Params.from_file(str(CONFIGS / config), {"vocabulary.vocab": vocab}))
    # Every arena encoder is a maelmo_plugin WordpieceLanguageModel: an encoder module and a torch Embedding.
    if not isinstance(model, WordpieceLanguageModel) or not isinstance(model.encoder, torch.nn.Module):
        raise TypeError(f"{config} builds a {type(model).__name__}, not a word-piece language model")
    counts = counted(model)  # as maelmo-arena counts an arm's
    return {key: counts[key] for key in ("total", "encoder", "embedding_dim")}


def facts(configs: dict, train: str, valid: str, vocab: str) -> dict:
    floor = unigram_floor(train, valid, vocab)
    return {
        "parameters": {encoder: parameters(config, vocab) for encoder, config in configs.items()},
        "word_frequency_floor": round(floor, 1),
        "vocabulary": Path(vocab).name,
    }


def main() -> None:
    files = data_files("full")
    target = RESULTS / "arena_encoders" / "baselines.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        json.dumps(facts(ARENA_ENCODERS, files["train"], files["validation"], files["vocab"]), indent=1)
    )
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
