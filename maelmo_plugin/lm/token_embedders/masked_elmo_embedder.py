from typing import Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.modules import ScalarMix
from allennlp.modules.token_embedders import TokenEmbedder

from maelmo_plugin.common.archive_assets import find_asset, holds_trained_weights, save_asset
from maelmo_plugin.common.wordpiece import wordpiece_entries
from maelmo_plugin.lm.loading import build_from_copy, copy_writer, open_language_model
from maelmo_plugin.lm.models.wordpiece_lm import WordpieceLanguageModel


@TokenEmbedder.register("maelmo_masked_elmo_embedder")
class MaskedElmoTokenEmbedder(TokenEmbedder):
    """
    Exposes a pre-trained language model archive of this plugin (`maelmo_masked_elmo_lm` over any encoder:
    Masked ELMo, BERT*, an AllenNLP encoder; or the ELMo baseline `maelmo_elmo_lm`) as ELMo-style contextual embeddings (Peters et al., 2018, equation 1): for
    each output representation,

        gamma * sum_j softmax(s)_j * h_j        over the L + 1 layers h_0 ... h_L

    The encoder runs from zero LSTM states on every batch (no state crosses sentences), on the word-pieces
    as they are: nothing is masked. With `requires_grad: false` the language model is frozen ("fz" in the
    paper's Table 2) and only the mixes train; with `true` it is fine-tuned ("ft").

    With `num_output_representations: 2`, two independent mixes are returned concatenated on the last
    dimension ([mix_1 ; mix_2], 2 x dim): jiant uses one at the task encoder's input and one skipped to its
    output, and the `maelmo_glue_classifier` splits them.

    Registered as a `TokenEmbedder` with name "maelmo_masked_elmo_embedder".

    # Parameters

    archive_file : `str`
        A `model.tar.gz` written by `allennlp train` with a `maelmo_masked_elmo_lm` or `maelmo_elmo_lm` model, or a
        Hugging Face export of a Masked ELMo (`allennlp maelmo-export`; see `maelmo_plugin.lm.loading`).
    requires_grad : `bool`, optional (default = `False`)
        Fine-tune the language model (otherwise it is frozen and kept in eval mode: no dropout).
    do_layer_norm : `bool`, optional (default = `False`)
        Layer-normalise each representation before mixing.
    dropout : `float`, optional (default = `0.5`)
        Dropout on the mixed representation (ELMo's default).
    num_output_representations : `int`, optional (default = `1`)
    scalar_mix_parameters : `List[float]`, optional (default = `None`)
        Fixed, untrained mixing weights (before the softmax); `None` learns them starting from equal weights.
    reinitialize : `bool`, optional (default = `False`)
        Build the archive's model from its config, with its vocabulary but freshly initialised weights (drawn
        from the global torch generator, i.e. the run's `pytorch_seed`): the "random encoder" control that
        tells how much of a GLUE score comes from pre-training rather than from the architecture.
    tokenizer_vocab : `str`, optional (default = `None`)
        The word-piece vocabulary the dataset reader's tokenizer uses; when given, it must be the one the
        archive was pre-trained with (same pieces, same ids), or a `ConfigurationError` names the first
        difference. Without the check, another vocabulary silently feeds the model the wrong embeddings.
    serialization_dir : `str`, optional (default = `None`)
        Given by AllenNLP (not set in configs). In training, the language model's config and vocabulary are
        copied into its `maelmo_assets/`; when the model is loaded from an archive (or resumed from a
        checkpoint), the language model is built from that copy and gets its weights from the archive's
        own, so `archive_file` is never opened again and may have moved or gone.
    """

    def __init__(
        self,
        archive_file: str,
        requires_grad: bool = False,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        num_output_representations: int = 1,
        scalar_mix_parameters: Optional[list[float]] = None,
        reinitialize: bool = False,
        tokenizer_vocab: Optional[str] = None,
        serialization_dir: Optional[str] = None,
    ) -> None:
        super().__init__()
        copy = find_asset(serialization_dir, "language_model", archive_file)
        if copy is not None and holds_trained_weights(serialization_dir):
            # Loading a trained model: its weights file overwrites the language model's.
            language_model = build_from_copy(copy)
        else:
            opened, model_params = open_language_model(archive_file, reinitialize, serialization_dir)
            if not isinstance(opened, WordpieceLanguageModel):
                raise ConfigurationError(
                    f"{archive_file} holds a {type(opened).__name__}, not a language model of this "
                    f"plugin (maelmo_masked_elmo_lm or maelmo_elmo_lm): it has no layer "
                    f"representations to mix."
                )
            language_model = opened
            if tokenizer_vocab is not None:
                _check_same_vocabulary(archive_file, language_model, tokenizer_vocab)
            save_asset(
                serialization_dir, "language_model", archive_file, copy_writer(language_model, model_params)
            )
        self._vocab_size = language_model.vocab.get_vocab_size(language_model.namespace)
        self._language_model = language_model
        self._requires_grad = requires_grad
        for parameter in self._language_model.parameters():
            parameter.requires_grad_(requires_grad)
        num_layers = language_model.num_representation_layers()
        if scalar_mix_parameters is not None and len(scalar_mix_parameters) != num_layers:
            raise ConfigurationError(
                f"scalar_mix_parameters has {len(scalar_mix_parameters)} values; the archive's model has "
                f"{num_layers} layers to mix (L + 1)."
            )
        self._mixes = torch.nn.ModuleList(
            ScalarMix(
                num_layers,
                do_layer_norm=do_layer_norm,
                initial_scalar_parameters=scalar_mix_parameters,  # type: ignore[arg-type]  # why: allennlp defaults it to None but annotates it List[float]
                trainable=scalar_mix_parameters is None,
            )
            for _ in range(num_output_representations)
        )
        self._dropout = torch.nn.Dropout(dropout)
        self._dim = language_model.representation_dim()

    def get_output_dim(self) -> int:
        return self._dim * len(self._mixes)

    def train(self, mode: bool = True) -> "MaskedElmoTokenEmbedder":
        super().train(mode)
        if not self._requires_grad:
            self._language_model.eval()  # a frozen model is a fixed feature extractor: no dropout
        return self

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """
        # Parameters

        tokens : `torch.Tensor`
            Word-piece ids, shape (batch_size, num_tokens), 0 ([PAD]) at padding: the output of the
            `single_id` indexer on `text_id` that the word-piece tokenizer's configs use.

        # Returns

        Shape (batch_size, num_tokens, num_output_representations x dim).
        """
        _check_token_ids(tokens, self._vocab_size)
        mask = tokens != 0
        with torch.set_grad_enabled(self._requires_grad and torch.is_grad_enabled()):
            layers = self._language_model.representations(tokens, mask)
        mixed = [self._dropout(mix(layers, mask)) for mix in self._mixes]
        return torch.cat(mixed, dim=-1) if len(mixed) > 1 else mixed[0]


def _check_same_vocabulary(
    archive_file: str, language_model: WordpieceLanguageModel, tokenizer_vocab: str
) -> None:
    """Ids index the archive's embedding: another vocabulary's ids would silently mean other pieces."""
    namespace = language_model.namespace
    archive_pieces = [
        language_model.vocab.get_token_from_index(index, namespace)
        for index in range(language_model.vocab.get_vocab_size(namespace))
    ]
    tokenizer_pieces = wordpiece_entries(tokenizer_vocab)
    if archive_pieces == tokenizer_pieces:
        return
    first = next(
        (index for index, pair in enumerate(zip(archive_pieces, tokenizer_pieces)) if pair[0] != pair[1]),
        min(len(archive_pieces), len(tokenizer_pieces)),
    )
    raise ConfigurationError(
        f"The word-piece vocabulary {tokenizer_vocab} ({len(tokenizer_pieces)} pieces) is not the one the "
        f"archive {archive_file} was pre-trained with ({len(archive_pieces)} pieces): at id {first}, the "
        f"archive has {_piece(archive_pieces, first)} and the vocabulary {_piece(tokenizer_pieces, first)}. "
        f"Set MAELMO_VOCAB (the tokenizer's `vocab`) to the archive's vocabulary, the one its pre-training "
        f"config names."
    )


def _piece(pieces: list[str], index: int) -> str:
    return repr(pieces[index]) if index < len(pieces) else "'(none: the vocabulary ends)'"


def _check_token_ids(tokens: torch.Tensor, vocab_size: int) -> None:
    """An id past the embedding would fail inside torch with an index error that names nothing."""
    largest = int(tokens.max()) if tokens.numel() else -1
    if largest >= vocab_size:
        raise ConfigurationError(
            f"Token id {largest} is outside the language model's vocabulary of {vocab_size} "
            f"word-pieces: the dataset reader's tokenizer uses a larger vocabulary than the archive. Give "
            f"the tokenizer the archive's vocabulary (MAELMO_VOCAB), and set the embedder's tokenizer_vocab "
            f"to it to check."
        )
