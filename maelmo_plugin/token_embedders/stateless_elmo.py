from typing import Optional

import torch
from allennlp.modules.token_embedders import ElmoTokenEmbedder, TokenEmbedder


@TokenEmbedder.register("maelmo_stateless_elmo")
class StatelessElmoTokenEmbedder(ElmoTokenEmbedder):
    """
    AllenNLP's `elmo_token_embedder` (the original ELMo, from its options and hdf5 weights) with its biLM's
    LSTM states reset before every batch, as jiant does for GLUE: AllenNLP's `ElmoLstm` is stateful and
    would otherwise carry the last batch's states into unrelated sentences, which makes a sentence's
    representation depend on the batch before it (and on batch order).

    Registered as a `TokenEmbedder` with name "maelmo_stateless_elmo". It takes the parameters of
    `ElmoTokenEmbedder` (options_file, weight_file, do_layer_norm, dropout, requires_grad, ...).
    """

    def forward(self, elmo_tokens: torch.Tensor, word_inputs: Optional[torch.Tensor] = None) -> torch.Tensor:
        self._elmo._elmo_lstm._elmo_lstm.reset_states()
        return super().forward(elmo_tokens, word_inputs)
