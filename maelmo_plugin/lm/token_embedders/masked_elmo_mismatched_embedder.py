import torch
from allennlp.common.checks import ConfigurationError
from allennlp.modules.token_embedders import TokenEmbedder
from allennlp.nn import util

from maelmo_plugin.lm.token_embedders.masked_elmo_embedder import MaskedElmoTokenEmbedder

POOLING = ("mean", "first")


@TokenEmbedder.register("maelmo_masked_elmo_mismatched_embedder")
class MaskedElmoMismatchedEmbedder(MaskedElmoTokenEmbedder):
    """
    One vector per word from a Masked ELMo that reads word-pieces: the word-level counterpart of
    `maelmo_masked_elmo_embedder`, as AllenNLP's `pretrained_transformer_mismatched` is of `pretrained_transformer`. It
    runs `maelmo_masked_elmo_embedder` (ELMo's scalar mix of all L + 1 layers, frozen or fine-tuned) on the sentence's
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

    Registered as a `TokenEmbedder` with name "maelmo_masked_elmo_mismatched_embedder".

    # Parameters

    archive_file : `str`
        A Masked ELMo or ELMo-baseline `model.tar.gz`, or an export: see `maelmo_masked_elmo_embedder`.
    pool : `str`, optional (default = `"mean"`)
        `"mean"`: the mean of a word's word-pieces; `"first"`: its first word-piece.
    **kwargs
        Every other parameter of `maelmo_masked_elmo_embedder` (`requires_grad`, `dropout`, `scalar_mix_parameters`,
        `tokenizer_vocab`, ...), with the same meaning and defaults: this is that embedder, pooled per word.
    """

    def __init__(self, archive_file: str, pool: str = "mean", **kwargs) -> None:
        if pool not in POOLING:
            raise ConfigurationError(f"pool is {pool!r}; it must be one of {list(POOLING)}.")
        super().__init__(archive_file, **kwargs)
        self._pool = pool

    def forward(  # type: ignore[override]  # why: AllenNLP passes an embedder its indexer's tensors by name, and this one's indexer gives four
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
        embeddings = super().forward(token_ids)
        # Shapes: (batch_size, num_words, longest_word, dim) and (batch_size, num_words, longest_word)
        pieces, piece_mask = util.batched_span_select(embeddings.contiguous(), offsets)
        piece_mask = piece_mask.unsqueeze(-1)
        pieces = pieces * piece_mask
        if self._pool == "first":
            # A masked first piece (padding, or a word without pieces) is already zero.
            return pieces[:, :, 0, :]
        # Shape: (batch_size, num_words, dim)
        return pieces.sum(2) / piece_mask.sum(2).clamp_min(1)
