"""
Any AllenNLP `Seq2SeqEncoder` as a language model's encoder: the models' contract (`LmEncoder`) around the
encoders AllenNLP users already configure.
"""

from typing import Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder

from maelmo_plugin.lm.modules.lm_encoder import LmEncoder, LmEncoderOutput, registered_name
from maelmo_plugin.lm.modules.recurrence import LayerState


@LmEncoder.register("maelmo_seq2seq")
class Seq2SeqLmEncoder(LmEncoder):
    """
    An AllenNLP `Seq2SeqEncoder` (`lstm`, `gru`, `pytorch_transformer`, `stacked_self_attention`, or one of your
    own) under a language model: its representations are h_0, the word-piece embeddings it reads, and h_1, its
    output. It carries no states: the language model reads every window on its own, as BERT* does.

    A config names the encoder directly under `model.encoder`, by its own registered type
    (`{"type": "lstm", "input_size": 128, "hidden_size": 64, "bidirectional": true}`): `LmEncoder` wraps a
    `Seq2SeqEncoder` in this class. Its input size is the embedding size, and its output size must equal it
    (the softmax is tied to the embedding; a bidirectional LSTM of hidden size d / 2 outputs d).

    Registered as a `LmEncoder` with name "maelmo_seq2seq" (`{"type": "maelmo_seq2seq", "encoder": {...}}`
    says the same as naming the encoder directly).

    # Parameters

    encoder : `Seq2SeqEncoder`
        The encoder. A `stateful` one is refused: it would carry states from row to row of unrelated
        windows; the language model's own encoders carry BTBPTT's states instead.
    """

    carries_states = False

    def __init__(self, encoder: Seq2SeqEncoder) -> None:
        super().__init__()
        if getattr(encoder, "stateful", False):
            raise ConfigurationError(
                f"model.encoder: a stateful {_configured_type(encoder)} would carry its states across unrelated "
                f"windows: remove `stateful` (a language model over it reads every window on its own)."
            )
        self.encoder = encoder

    @property
    def configured_type(self) -> str:
        return _configured_type(self.encoder)

    @property
    def max_positions(self) -> Optional[int]:
        """
        How many positions the encoder has: AllenNLP's `pytorch_transformer` with `positional_encoding:
        "embedding"` learns `positional_embedding_size` of them, and cannot read a longer line; None for any
        length.
        """
        embedding = getattr(self.encoder, "_positional_embedding", None)
        return embedding.num_embeddings if isinstance(embedding, torch.nn.Embedding) else None

    def get_input_dim(self) -> int:
        return self.encoder.get_input_dim()

    def get_output_dim(self) -> int:
        return self.encoder.get_output_dim()

    @property
    def num_layers(self) -> int:
        return 1

    def forward(
        self,
        embeddings: torch.Tensor,
        mask: Optional[torch.Tensor],
        initial_states: Optional[list[LayerState]] = None,
    ) -> LmEncoderOutput:
        """
        # Parameters

        embeddings, mask, initial_states
            As `LmEncoder` says; `mask` None means no padding, and `initial_states` must be None.

        # Returns

        `[embeddings, output]`, each (batch_size, num_tokens, dim), and None (no states).
        """
        if initial_states is not None:
            raise ConfigurationError(f"{self.configured_type} carries no states between windows.")
        limit = self.max_positions
        if limit is not None and embeddings.shape[1] > limit:
            raise ConfigurationError(
                f"A window of {embeddings.shape[1]} word-pieces exceeds the {limit} positions of model.encoder "
                f"({self.configured_type}): lower the loader's sequence_length or raise its "
                f"positional_embedding_size."
            )
        if mask is None:
            mask = embeddings.new_ones(embeddings.shape[:2], dtype=torch.bool)
        return [embeddings, self.encoder(embeddings, mask)], None


def _configured_type(encoder: Seq2SeqEncoder) -> str:
    return f'"{registered_name(Seq2SeqEncoder, type(encoder))}" (an AllenNLP Seq2SeqEncoder)'
