from typing import List, Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.modules.token_embedders import TokenEmbedder
from allennlp.nn import util

from maelmo_plugin.token_embedders.masked_elmo_embedder import MaskedElmoTokenEmbedder

POOLING = ("mean", "first")


@TokenEmbedder.register("maelmo_mismatched_embedder")
class MaskedElmoMismatchedEmbedder(TokenEmbedder):
    """
    One vector per word from a Masked ELMo that reads word-pieces: the word-level counterpart of
    `maelmo_embedder`, as AllenNLP's `pretrained_transformer_mismatched` is of `pretrained_transformer`. It
    runs `maelmo_embedder` (ELMo's scalar mix of all L + 1 layers, frozen or fine-tuned) on the sentence's
    word-pieces from the `maelmo_wordpiece_mismatched` indexer, then pools each word's pieces.

    Why this and not AllenNLP's own `pretrained_transformer_mismatched` on the Hugging Face export (which
    also works, see docs/hf_export.md): that embedder mixes `hidden_states[1:]`, leaving out layer 0, the
    context-free word-piece embedding that ELMo's mix includes and that carries much of a word's identity
    for tagging; it needs an export directory where this takes the `model.tar.gz` of pre-training too; and
    its archive would need that directory again at load, where this one's archive is self-contained.

    The default pooling is the mean of a word's pieces: in a biLSTM the first piece's forward state has not
    read the rest of the word (nor its last piece's backward state the beginning), while the mean holds both
    directions' view of the whole word. `first` is BERT's choice for tagging, kept for comparison. (The
    values are those of the `maelmo_representations` predictor's `pool`; AllenNLP's `sub_token_mode` calls
    the mean "avg".)

    Registered as a `TokenEmbedder` with name "maelmo_mismatched_embedder".

    # Parameters

    archive_file : `str`
        A Masked ELMo or ELMo-baseline `model.tar.gz`, or an export: see `maelmo_embedder`.
    pool : `str`, optional (default = `"mean"`)
        `"mean"`: the mean of a word's word-pieces; `"first"`: its first word-piece.
    requires_grad : `bool`, optional (default = `False`)
    do_layer_norm : `bool`, optional (default = `False`)
    dropout : `float`, optional (default = `0.5`)
    num_output_representations : `int`, optional (default = `1`)
    scalar_mix_parameters : `List[float]`, optional (default = `None`)
    reinitialize : `bool`, optional (default = `False`)
    tokenizer_vocab : `str`, optional (default = `None`)
    serialization_dir : `str`, optional (default = `None`)
        All as for `maelmo_embedder`, which this passes them to.
    """

    def __init__(
        self,
        archive_file: str,
        pool: str = "mean",
        requires_grad: bool = False,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        num_output_representations: int = 1,
        scalar_mix_parameters: Optional[List[float]] = None,
        reinitialize: bool = False,
        tokenizer_vocab: Optional[str] = None,
        serialization_dir: Optional[str] = None,
    ) -> None:
        super().__init__()
        if pool not in POOLING:
            raise ConfigurationError(f"pool is {pool!r}; it must be one of {list(POOLING)}.")
        self._pool = pool
        self._matched_embedder = MaskedElmoTokenEmbedder(
            archive_file,
            requires_grad=requires_grad,
            do_layer_norm=do_layer_norm,
            dropout=dropout,
            num_output_representations=num_output_representations,
            scalar_mix_parameters=scalar_mix_parameters,
            reinitialize=reinitialize,
            tokenizer_vocab=tokenizer_vocab,
            serialization_dir=serialization_dir,
        )

    def get_output_dim(self) -> int:
        return self._matched_embedder.get_output_dim()

    def forward(  # type: ignore
        self,
        token_ids: torch.LongTensor,
        mask: torch.BoolTensor,
        offsets: torch.LongTensor,
        wordpiece_mask: torch.BoolTensor,
    ) -> torch.Tensor:
        """
        # Parameters

        token_ids : `torch.LongTensor`
            From the `maelmo_wordpiece_mismatched` indexer: shape (batch_size, num_wordpieces).
        mask : `torch.BoolTensor`
            Shape (batch_size, num_words) (the tagger's mask; not needed here).
        offsets : `torch.LongTensor`
            Shape (batch_size, num_words, 2): the inclusive span of each word's pieces in `token_ids`.
        wordpiece_mask : `torch.BoolTensor`
            Shape (batch_size, num_wordpieces).

        # Returns

        Shape (batch_size, num_words, output_dim); zeros for padding and for words without pieces.
        """
        # Shape: (batch_size, num_wordpieces, dim)
        embeddings = self._matched_embedder(token_ids)
        # Shapes: (batch_size, num_words, longest_word, dim) and (batch_size, num_words, longest_word)
        pieces, piece_mask = util.batched_span_select(embeddings.contiguous(), offsets)
        piece_mask = piece_mask.unsqueeze(-1)
        pieces = pieces * piece_mask
        if self._pool == "first":
            # A masked first piece (padding, or a word without pieces) is already zero.
            return pieces[:, :, 0, :]
        # Shape: (batch_size, num_words, dim)
        return pieces.sum(2) / piece_mask.sum(2).clamp_min(1)
