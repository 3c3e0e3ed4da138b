"""
BERT's encoder behind the interface of the biLSTM encoders, for BERT* (Senay & Salin, 2020, Tables 2-3):
a BERT trained by the same pipeline as Masked ELMo, so that the two differ only in the encoder.
"""

from typing import Any, Optional

import torch
from allennlp.common.checks import ConfigurationError
from transformers import BertConfig, BertModel, RobertaPreLayerNormConfig, RobertaPreLayerNormModel

from maelmo_plugin.lm.modules.lm_encoder import LmEncoder

LAYER_NORMS = ("post", "pre")


@LmEncoder.register("maelmo_transformer")
class TransformerEncoder(LmEncoder):
    """
    `transformers`' `BertModel` (post-LayerNorm blocks, GELU, learned absolute positions) reading the word-piece
    embeddings it is given (the language model owns them: they are also its tied softmax), so it has no
    word-embedding table of its own. Its output is BERT's L + 1 hidden states: h_0 is the
    embeddings plus positions after BERT's LayerNorm, h_1 ... h_L the blocks' outputs.

    With `layer_norm="pre"` the blocks normalise their inputs instead (Xiong et al., 2020: pre-LN trains
    without the warm-up's fragility and at higher learning rates, which matters for a small BERT* on a short
    budget): `transformers`' `RobertaPreLayerNormModel`, the same blocks and parameters as BERT's but for
    the place of each LayerNorm and one final LayerNorm, applied to h_L (so every h_l a caller mixes is on
    the scale of a normalised vector at h_0 and h_L; the middle ones are the residual stream).

    It carries no state across windows: `initial_states` must be `None`, and it returns no final states.

    Registered as a `LmEncoder` with name "maelmo_transformer".

    # Parameters

    input_dim : `int`, optional (default = `768`)
        The hidden size (BERT-base: 768).
    num_layers : `int`, optional (default = `12`)
    num_attention_heads : `int`, optional (default = `12`)
        Must divide `input_dim`.
    intermediate_dim : `int`, optional (default = `3072`)
        The feed-forward size (BERT-base: 4 x 768).
    max_positions : `int`, optional (default = `512`)
        The longest window it can read (BERT's position table).
    dropout : `float`, optional (default = `0.1`)
        BERT's hidden and attention dropout.
    layer_norm : `str`, optional (default = `"post"`)
        `"post"` (BERT's blocks) or `"pre"` (see above).
    """

    carries_states = False

    def output_head_config(self) -> Any:
        """BERT's head over BERT's blocks is configured as they are (`LmEncoder.output_head_config`)."""
        return self.config

    def __init__(
        self,
        input_dim: int = 768,
        num_layers: int = 12,
        num_attention_heads: int = 12,
        intermediate_dim: int = 3072,
        max_positions: int = 512,
        dropout: float = 0.1,
        layer_norm: str = "post",
    ) -> None:
        super().__init__()
        if layer_norm not in LAYER_NORMS:
            raise ConfigurationError(
                f"model.encoder.layer_norm must be one of {LAYER_NORMS}, got {layer_norm!r}."
            )
        if input_dim % num_attention_heads != 0:
            raise ConfigurationError(
                f"model.encoder.input_dim ({input_dim}) must be a multiple of num_attention_heads "
                f"({num_attention_heads}): each head gets input_dim / num_attention_heads dimensions."
            )
        self.layer_norm = layer_norm
        sizes = dict(
            vocab_size=1,  # the language model's own embedding is given as inputs_embeds
            hidden_size=input_dim,
            num_hidden_layers=num_layers,
            num_attention_heads=num_attention_heads,
            intermediate_size=intermediate_dim,
            hidden_dropout_prob=dropout,
            attention_probs_dropout_prob=dropout,
            attn_implementation="eager",  # the same kernels on every torch version and device
        )
        if layer_norm == "post":
            self.config = BertConfig(max_position_embeddings=max_positions, **sizes)
            self.bert = BertModel(self.config, add_pooling_layer=False)
        else:
            # RoBERTa's positions start after the padding index (0 here): one more row for the same windows.
            self.config = RobertaPreLayerNormConfig(
                max_position_embeddings=max_positions + 1, pad_token_id=0, **sizes
            )
            self.bert = RobertaPreLayerNormModel(self.config, add_pooling_layer=False)
        # BERT's own word-embedding table is never read (inputs_embeds is given): drop it, so it is no parameter.
        self.bert.embeddings.word_embeddings = None

    def get_input_dim(self) -> int:
        return self.config.hidden_size

    def get_output_dim(self) -> int:
        return self.config.hidden_size

    @property
    def num_layers(self) -> int:
        return self.config.num_hidden_layers

    def forward(
        self, embeddings: torch.Tensor, mask: torch.Tensor, initial_states: Optional[object] = None
    ) -> tuple[list[torch.Tensor], None]:
        """
        # Parameters

        embeddings : `torch.Tensor`
            Shape (batch_size, num_tokens, input_dim).
        mask : `torch.BoolTensor`
            Shape (batch_size, num_tokens), False at padding.

        # Returns

        The L + 1 representations, each (batch_size, num_tokens, input_dim), and `None` (no state).
        """
        if initial_states is not None:
            raise ConfigurationError("The transformer encoder carries no state between windows.")
        num_tokens = embeddings.size(1)
        if num_tokens > self.max_positions:
            raise ConfigurationError(
                f"A window of {num_tokens} word-pieces exceeds the transformer's {self.max_positions} "
                f"positions: lower the loader's sequence_length or raise model.encoder.max_positions."
            )
        output = self.bert(inputs_embeds=embeddings, attention_mask=mask.long(), output_hidden_states=True)
        # Pre-LN: the model's final LayerNorm is in last_hidden_state only, not in hidden_states[-1].
        return list(output.hidden_states[:-1]) + [output.last_hidden_state], None

    @property
    def max_positions(self) -> int:
        return self.config.max_position_embeddings - (1 if self.layer_norm == "pre" else 0)
