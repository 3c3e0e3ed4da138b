"""
What an arm is made of, counted: a pre-training config's model built as `allennlp train` builds it (its vocabulary
first), and its parameters, all of them (the tied word-piece embedding too) and its encoder's alone (what matches
whatever the vocabulary's size). `maelmo-arena`'s parameter report and the reproduction's baselines table count
with it.
"""

from collections.abc import Sequence
from typing import Any

from allennlp.common import Params
from allennlp.data import Vocabulary
from allennlp.models import Model


def built(params: Params) -> Model:
    """The model of a training config's `params` (its `vocabulary` and `model` popped)."""
    vocabulary = Vocabulary.from_params(params.pop("vocabulary"))
    return Model.from_params(vocab=vocabulary, params=params.pop("model"))


def counted(model: Model) -> dict[str, Any]:
    """{total, encoder, model (its class), embedding_dim (None for a model without a word-piece embedding)}."""
    encoder = getattr(model, "encoder", model)
    embedding = getattr(model, "embedding", None)
    return {
        "total": sum(parameter.numel() for parameter in model.parameters()),
        "encoder": sum(parameter.numel() for parameter in encoder.parameters()),
        "model": type(model).__name__,
        "embedding_dim": getattr(embedding, "embedding_dim", None),
    }


def spread(values: Sequence[int]) -> float:
    """How far the largest count lies above the smallest, as a fraction of the smallest."""
    return max(values) / min(values) - 1 if min(values) else float("inf")
