from typing import Any, Optional

import torch
import torch.nn.functional as F
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.nn import InitializerApplicator
from allennlp.training.metrics import Perplexity

from maelmo_plugin.common.wordpiece import WORDPIECE_NAMESPACE
from maelmo_plugin.lm.batch import LmBatch
from maelmo_plugin.lm.models.wordpiece_lm import WordpieceLanguageModel
from maelmo_plugin.lm.modules.carried_states import map_states
from maelmo_plugin.lm.modules.lm_encoder import LmEncoder


@Model.register("maelmo_elmo_lm")
class ElmoLanguageModel(WordpieceLanguageModel):
    """
    The ELMo bidirectional language model (Peters et al., 2018, https://arxiv.org/abs/1802.05365, section 3)
    over word-pieces: the baseline that Masked ELMo (Senay & Salin, 2020, https://arxiv.org/abs/2010.04302,
    Table 4) is compared with. A forward LM predicts each next token, a backward LM each previous one, from
    two independent LSTM stacks; both share the token embedding and ONE softmax, tied to that embedding
    (plus a bias). The loss is the mean of the two directions' mean cross-entropies, as in bilm-tf.

    Targets exist only inside a window and at real tokens:

        tokens            t0    t1    t2    t3    [PAD]
        forward  (-> t+1) t1    t2    t3    -     -        position t predicts token t+1
        backward (-> t-1) -     t0    t1    t2    -        position t predicts token t-1

    so a window of n real tokens gives n - 1 targets per direction.

    **Statefulness and TBPTT**: when batches come with `reset_states` (the `maelmo_btbptt` loader), the
    model carries the FORWARD stack's states (every layer) from one batch to the next for each row,
    detached, and starts a row from zeros where `reset_states` is set. The BACKWARD stack starts every
    window from zero states. A right-to-left LSTM should start a window from the state it reached on the
    window to the RIGHT; with plain TBPTT (`bidirectional: false` in the loader) the previous batch holds
    the window to the LEFT, so carrying the backward state would feed it context from the wrong side.
    BTBPTT would make the backward state right on its reversed rows, but then the forward state would be
    wrong on those same rows; since the two directions are independent here (unlike Masked ELMo, whose
    layer 2 reads both), neither ordering helps both. bilm-tf avoids the problem by feeding the backward
    LM its own batches of a reversed stream; here both directions must read the same window (the
    representations of a token are [forward ; backward]), so the backward direction gives up cross-window
    context instead. Use the loader with `bidirectional: false` (plain TBPTT), so the forward direction's
    carried state is the right one on every row. With `carry_states_in_training: false` the forward stack
    starts every training window from zero states too, on the same stateful batches: the GLUE embedder
    reads every sentence from zero states, and a forward LSTM that almost never starts there is left
    unconstrained there (docs/reproduction.md, the arena). Validation and evaluation start every batch from
    zeros unless `carry_states_in_evaluation` is set. Batches without `reset_states` always start from zeros.

    Registered as a `Model` with name "maelmo_elmo_lm".

    # Parameters

    vocab : `Vocabulary`
        Must hold the word-piece vocabulary in `namespace` (see the "maelmo_wordpiece" vocabulary).
    encoder : `LmEncoder`
        The two LSTM stacks, `"maelmo_elmo_bilm"` (what a config without a type means, as every config
        before 0.2), or another encoder that keeps its directions apart (`independent_directions`): the
        forward half of its top layer must not see the right context, nor the backward half the left. The
        embedding size is its input size (the projection size).
    dropout : `float`, optional (default = `0.1`)
        Dropout on the top layer's output before the softmax (bilm-tf's, at ELMo's 0.1).
    carry_states_in_training : `bool`, optional (default = `True`)
        Carry the forward direction's states across training batches, as ELMo trains (above); `False` starts
        every training window from zero states in both directions, as the model is read downstream.
    carry_states_in_evaluation : `bool`, optional (default = `False`)
        Carry states across batches at validation/evaluation too (needs the `maelmo_btbptt` loader there).
    namespace : `str`, optional (default = `"wordpieces"`)
    initializer : `InitializerApplicator`, optional
        The embedding is initialised N(0, 0.02) (it is also the output softmax), the LSTMs as their
        implementations do.

    NOTE: bilm-tf trains with a sampled softmax (8,192 negatives); this model computes the full softmax,
    which a 29k word-piece vocabulary affords. `perplexity` is exp of the mean of the two losses, i.e. the
    geometric mean of the two directions' perplexities (the ELMo paper quotes their arithmetic mean).
    """

    def __init__(
        self,
        vocab: Vocabulary,
        encoder: LmEncoder,
        dropout: float = 0.1,
        carry_states_in_training: bool = True,
        carry_states_in_evaluation: bool = False,
        namespace: str = WORDPIECE_NAMESPACE,
        initializer: Optional[InitializerApplicator] = None,
        **kwargs,
    ) -> None:
        if not encoder.independent_directions:
            raise ConfigurationError(
                f"model.encoder: maelmo_elmo_lm predicts each next token from the forward half of the top layer "
                f"and each previous one from the backward half, so its encoder must keep the two directions "
                f'apart; {encoder.configured_type} does not. Use "maelmo_elmo_bilm".'
            )
        super().__init__(vocab, encoder, namespace, carry_states_in_evaluation, **kwargs)
        self._dropout = torch.nn.Dropout(dropout)
        self._carry_states_in_training = carry_states_in_training
        self._forward_perplexity = Perplexity()
        self._backward_perplexity = Perplexity()
        self._perplexity = Perplexity()
        if initializer is not None:
            initializer(self)

    def _batch_loss(
        self, token_ids: torch.Tensor, mask: torch.BoolTensor, batch: LmBatch
    ) -> dict[str, torch.Tensor]:
        """
        With the `LmBatch`'s `reset_states` the model carries the forward direction's states. It draws no
        masks: `window_keys` is not used, and `mask_pass` and `token_positions` are refused, to say clearly
        that they do not apply.

        # Returns

        loss : `torch.Tensor`
            The mean of `forward_loss` and `backward_loss`, a scalar.
        forward_loss : `torch.Tensor`
            Mean next-token cross-entropy over the window's real positions that have a next token, a scalar.
        backward_loss : `torch.Tensor`
            Mean previous-token cross-entropy, likewise, a scalar.
        """
        if "token_positions" in batch:
            raise ConfigurationError(
                "maelmo_elmo_lm predicts every token and masks nothing: remove the maelmo_btbptt loader's "
                "mask_by_position (it keys masks by position)."
            )
        if "mask_pass" in batch:
            raise ConfigurationError(
                "maelmo_elmo_lm predicts every token and masks nothing: set the maelmo_btbptt loader's "
                "mask_accumulation_passes to 1 (and the trainer's num_gradient_accumulation_steps back)."
            )
        reset_states = batch.get("reset_states")
        if self.training and not self._carry_states_in_training:
            reset_states = None  # every window from zero states, none carried to the next
        representations, final_states = self._encoder(
            self._embedding(token_ids), mask, self._initial_states(reset_states)
        )
        if reset_states is not None:
            self._states().update(self._forward_direction_only(final_states))
        # Shape: (batch_size, num_tokens, dim) each, dim = the projection size
        forward_top, backward_top = self._dropout(representations[-1]).chunk(2, dim=-1)
        # Shape: (batch_size, num_tokens - 1): both t and t + 1 are real tokens (rows are left-aligned)
        pairs = mask[:, 1:]
        # Shape: (2 * num_pairs, dim): the forward direction at t predicts t + 1, the backward at t + 1
        # predicts t
        hidden = torch.cat([forward_top[:, :-1][pairs], backward_top[:, 1:][pairs]])
        targets = torch.cat([token_ids[:, 1:][pairs], token_ids[:, :-1][pairs]])
        # Shape: (2 * num_pairs, vocab_size)
        logits = self._output_logits(hidden)
        num_pairs = int(pairs.sum())
        # Shape: (2,): the forward and backward mean losses (0 for a batch of one-token windows)
        losses = F.cross_entropy(logits, targets, reduction="none").view(2, num_pairs)
        losses = losses.sum(dim=1) / max(num_pairs, 1)
        forward_loss, backward_loss = losses.unbind()
        loss = losses.mean()
        if num_pairs > 0:
            self._forward_perplexity(forward_loss.detach())
            self._backward_perplexity(backward_loss.detach())
            self._perplexity(loss.detach())
        return {"loss": loss, "forward_loss": forward_loss, "backward_loss": backward_loss}

    @staticmethod
    def _forward_direction_only(final_states: Any) -> Any:
        """The states to carry: the forward direction's (index 0), zeros for the backward one (index 1)."""
        return map_states(lambda tensor: torch.cat([tensor[:1], torch.zeros_like(tensor[1:])]), final_states)

    def get_metrics(self, reset: bool = False) -> dict[str, float]:
        # Python floats: numpy scalars in checkpoints break torch>=2.6's weights_only loading.
        return {
            "forward_perplexity": float(self._forward_perplexity.get_metric(reset)),
            "backward_perplexity": float(self._backward_perplexity.get_metric(reset)),
            "perplexity": float(self._perplexity.get_metric(reset)),
        }
