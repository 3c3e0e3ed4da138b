from typing import Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.nn import InitializerApplicator
from transformers.models.bert.modeling_bert import BertPredictionHeadTransform

from maelmo_plugin.lm.models.masked_elmo_lm import MaskedElmoLanguageModel
from maelmo_plugin.lm.modules.transformer_encoder import TransformerEncoder


@Model.register("maelmo_bert_lm")
class BertLanguageModel(MaskedElmoLanguageModel):
    """
    BERT* of Masked ELMo's Tables 2-3 (Senay & Salin, 2020, https://arxiv.org/abs/2010.04302): a BERT trained
    on the same corpus, with the same 128-token windows, as Masked ELMo. Here it is trained by the same code
    too: the `maelmo_mlm_corpus` reader and `maelmo_btbptt` loader, the keyed masks (a window gets the masks
    Masked ELMo's would), mask accumulation, the tied softmax at the masked positions and the per-token
    perplexity are `maelmo_masked_elmo_lm`'s. What differs is the encoder (`TransformerEncoder`, BERT's), BERT's
    prediction-head transform (dense, GELU, LayerNorm) before the tied softmax, and state: a transformer
    reads every window on its own, so `reset_states` is ignored and nothing is carried. The loader's rows
    still decide which windows share a batch, so both models see the same data per update.

    As in the paper's BERT*, there is no next-sentence objective: windows are cut from the document stream
    as for Masked ELMo.

    Registered as a `Model` with name "maelmo_bert_lm".

    # Parameters

    vocab : `Vocabulary`
        Must hold the word-piece vocabulary in `namespace`.
    encoder : `TransformerEncoder`
        BERT's blocks; the embedding size is its `input_dim`.
    initializer : `InitializerApplicator`, optional
        BERT's initialisation (N(0, 0.02), LayerNorm at identity) is applied before it.
    **kwargs
        `maelmo_masked_elmo_lm`'s other parameters, with the same meaning and defaults: `masking`,
        `num_mask_sets`, `mask_accumulation`, `namespace` and `seed` (a config names them as for that
        model). Not `carry_states_in_evaluation`: there are no states to carry.
    """

    carries_states = False

    def __init__(
        self,
        vocab: Vocabulary,
        encoder: TransformerEncoder,
        initializer: Optional[InitializerApplicator] = None,
        **kwargs,
    ) -> None:
        if kwargs.pop("carry_states_in_evaluation", False):
            raise ConfigurationError(
                "maelmo_bert_lm reads every window on its own and has no states to carry: remove "
                "model.carry_states_in_evaluation."
            )
        super().__init__(
            vocab,
            encoder,  # type: ignore[arg-type]  # why: the base class names MaskedElmoEncoder for FromParams to build; its code needs only an LmEncoder
            **kwargs,
        )
        self._transform = BertPredictionHeadTransform(encoder.config)
        self._transform.apply(encoder.bert._init_weights)
        if initializer is not None:
            initializer(self)

    @property
    def transformer(self) -> TransformerEncoder:
        """The encoder, which the base class knows only as an `LmEncoder`."""
        assert isinstance(self._encoder, TransformerEncoder), "the constructor takes a TransformerEncoder"
        return self._encoder

    def _output_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        # BERT's MLM head: transform, then the decoder tied to the word-piece embedding.
        return super()._output_logits(self._transform(hidden))
