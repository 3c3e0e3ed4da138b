from typing import List, Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive
from allennlp.modules import ScalarMix
from allennlp.modules.token_embedders import TokenEmbedder


@TokenEmbedder.register("maelmo_embedder")
class MaskedElmoTokenEmbedder(TokenEmbedder):
    """
    Exposes a pre-trained Masked ELMo (`maelmo_masked_lm`) or ELMo baseline (`maelmo_elmo_lm`) archive as
    ELMo-style contextual embeddings (Peters et al., 2018, equation 1): for each output representation,

        gamma * sum_j softmax(s)_j * h_j        over the L + 1 layers h_0 ... h_L

    The encoder runs from zero LSTM states on every batch (no state crosses sentences), on the word-pieces
    as they are: nothing is masked. With `requires_grad: false` the language model is frozen ("fz" in the
    paper's Table 2) and only the mixes train; with `true` it is fine-tuned ("ft").

    With `num_output_representations: 2`, two independent mixes are returned concatenated on the last
    dimension ([mix_1 ; mix_2], 2 x dim): jiant uses one at the task encoder's input and one skipped to its
    output, and the `maelmo_glue_classifier` splits them.

    Registered as a `TokenEmbedder` with name "maelmo_embedder".

    # Parameters

    archive_file : `str`
        A `model.tar.gz` written by `allennlp train` with a `maelmo_masked_lm` or `maelmo_elmo_lm` model.
    requires_grad : `bool`, optional (default = `False`)
        Fine-tune the language model (otherwise it is frozen and kept in eval mode: no dropout).
    do_layer_norm : `bool`, optional (default = `False`)
        Layer-normalise each representation before mixing.
    dropout : `float`, optional (default = `0.5`)
        Dropout on the mixed representation (ELMo's default).
    num_output_representations : `int`, optional (default = `1`)
    scalar_mix_parameters : `List[float]`, optional (default = `None`)
        Fixed, untrained mixing weights (before the softmax); `None` learns them starting from equal weights.
    """

    def __init__(
        self,
        archive_file: str,
        requires_grad: bool = False,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        num_output_representations: int = 1,
        scalar_mix_parameters: Optional[List[float]] = None,
    ) -> None:
        super().__init__()
        language_model = load_archive(archive_file).model
        if not hasattr(language_model, "representations"):
            raise ConfigurationError(
                f"{archive_file} holds a {type(language_model).__name__}, not a Masked ELMo or ELMo language "
                f"model (maelmo_masked_lm / maelmo_elmo_lm): it has no layer representations to mix."
            )
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
                initial_scalar_parameters=scalar_mix_parameters,
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

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:  # type: ignore
        """
        # Parameters

        tokens : `torch.Tensor`
            Word-piece ids, shape (batch_size, num_tokens), 0 ([PAD]) at padding: the output of the
            `single_id` indexer on `text_id` that the word-piece tokenizer's configs use.

        # Returns

        Shape (batch_size, num_tokens, num_output_representations x dim).
        """
        mask = tokens != 0
        with torch.set_grad_enabled(self._requires_grad and torch.is_grad_enabled()):
            layers = self._language_model.representations(tokens, mask)
        mixed = [self._dropout(mix(layers, mask)) for mix in self._mixes]
        return torch.cat(mixed, dim=-1) if len(mixed) > 1 else mixed[0]
