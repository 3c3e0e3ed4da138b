from typing import Optional

import torch
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models import Model
from allennlp.nn import InitializerApplicator
from transformers.models.bert.modeling_bert import BertPredictionHeadTransform

from maelmo_plugin.common.wordpiece import WORDPIECE_NAMESPACE
from maelmo_plugin.lm.masking import MlmMasking
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
    masking : `MlmMasking`, optional (default = `MlmMasking(vocab)`, BERT's 15% with 80/10/10)
    num_mask_sets : `int`, optional (default = `1`)
        k mutually exclusive selections per batch (see `maelmo_masked_elmo_lm`).
    mask_accumulation : `str`, optional (default = `"batched"`)
    namespace : `str`, optional (default = `"wordpieces"`)
    seed : `int`, optional (default = `13370`)
        Seeds the masking generators.
    initializer : `InitializerApplicator`, optional
        BERT's initialisation (N(0, 0.02), LayerNorm at identity) is applied before it.
    """

    def __init__(
        self,
        vocab: Vocabulary,
        encoder: TransformerEncoder,
        masking: Optional[MlmMasking] = None,
        num_mask_sets: int = 1,
        mask_accumulation: str = "batched",
        namespace: str = WORDPIECE_NAMESPACE,
        seed: int = 13370,
        initializer: Optional[InitializerApplicator] = None,
        **kwargs,
    ) -> None:
        super().__init__(
            vocab,
            encoder,  # type: ignore[arg-type]  # why: the base class names MaskedElmoEncoder for FromParams to build; its code needs only an LmEncoder
            masking=masking,
            num_mask_sets=num_mask_sets,
            mask_accumulation=mask_accumulation,
            carry_states_in_evaluation=False,
            namespace=namespace,
            seed=seed,
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

    def forward(
        self,
        tokens: TextFieldTensors,
        reset_states: Optional[torch.BoolTensor] = None,
        window_keys: Optional[torch.LongTensor] = None,
        mask_pass: Optional[int] = None,
        token_positions: Optional[torch.LongTensor] = None,
    ) -> dict[str, torch.Tensor]:
        """As `maelmo_masked_elmo_lm`'s; `reset_states` is accepted from the loader and ignored (no state)."""
        return super().forward(tokens, None, window_keys, mask_pass, token_positions)

    def _output_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        # BERT's MLM head: transform, then the decoder tied to the word-piece embedding.
        return super()._output_logits(self._transform(hidden))
