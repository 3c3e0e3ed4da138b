from typing import Any, Optional, Self

import torch
import torch.nn.functional as F
from allennlp.common.checks import ConfigurationError
from allennlp.common.util import is_distributed
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.nn import InitializerApplicator
from allennlp.training.metrics import CategoricalAccuracy
from transformers.models.bert.modeling_bert import BertPredictionHeadTransform

from maelmo_plugin.common.wordpiece import WORDPIECE_NAMESPACE
from maelmo_plugin.lm.batch import LmBatch
from maelmo_plugin.lm.masking import Draws, KeyedDraws, MlmMasking, PositionDraws
from maelmo_plugin.lm.models.wordpiece_lm import WordpieceLanguageModel
from maelmo_plugin.lm.modules.carried_states import first_rows, repeat_states
from maelmo_plugin.lm.modules.lm_encoder import LmEncoder
from maelmo_plugin.training.token_perplexity import TokenPerplexity

MASK_ACCUMULATION_MODES = ("batched", "sequential")
# What may come between the encoder and the tied softmax: nothing, or BERT's prediction-head transform.
OUTPUT_TRANSFORMS = ("bert",)


@Model.register("maelmo_masked_elmo_lm")
class MaskedElmoLanguageModel(WordpieceLanguageModel):
    """
    Masked ELMo pre-training (Senay & Salin, 2020, https://arxiv.org/abs/2010.04302): BERT's masked-LM
    objective on a fully contextual biLSTM encoder, with the softmax tied to the input embedding.

    Masks are drawn inside `forward` for every batch (so every epoch sees new ones). With the
    `maelmo_btbptt` loader, each row's masks come from a generator seeded by `seed` and the row's
    `window_keys` (its place in the stream: epoch, global row, window): they depend on that place only, so
    any number of workers, and a resumed run, draw the same masks, and an unshuffled validation loader
    gives every validation pass the same masks. With the loader's `mask_by_position`, each word-piece's mask
    comes from its own place in the stream (`token_positions`), whatever the windows' length. Without keys,
    one generator seeded by `seed` draws for the
    whole batch in training, and in validation and evaluation a second one, re-seeded whenever the model is
    put in eval mode, so that every pass masks the same positions and its perplexity is comparable.

    The loss is the mean cross-entropy over the predicted positions of the batch, over all workers under
    distributed training: each worker divides its sum by the global count, so the averaged gradient is
    that of one worker running the whole batch. The perplexity metric is per token too, exp(total
    cross-entropy / predicted positions) over all batches, so a batch with few masked positions weighs
    as little as it should.

    Logits are computed only at the selected positions: (masked tokens) x (vocabulary) instead of
    (all tokens) x (vocabulary), which is most of the softmax cost at a 29k vocabulary.

    **Mask accumulation** (paper 3.1): k mutually exclusive selections per batch, each giving a corrupted
    copy of the batch; the gradients of the k copies are averaged before one optimizer step, and every copy
    starts from the same LSTM states. Two ways, with the same mathematics:

    * `"batched"`: the k copies run as one batch of k x batch_size rows; the loss is the mean of the k
      per-copy mean losses. Fastest; memory grows with k.
    * `"sequential"`: one copy per forward/backward pass. The `maelmo_btbptt` loader hands each batch k
      times (`mask_accumulation_passes: k`, with `mask_pass` 0 ... k-1) and AllenNLP's
      `num_gradient_accumulation_steps: k` averages the k gradients. The k selections are drawn at pass 0.

    **Statefulness**: when batches come with `reset_states` (the `maelmo_btbptt` loader), the model carries
    every layer's LSTM states, both directions, from one batch to the next for each row, detached (no
    gradient crosses a batch edge), and starts a row from zeros where `reset_states` is set (the first
    window of a row's stream: every epoch start). With mask accumulation, the carried states are those of
    the first copy (pass). Validation and evaluation start every batch from zeros unless
    `carry_states_in_evaluation` is set. Batches without `reset_states` always start from zeros.

    Registered as a `Model` with name "maelmo_masked_elmo_lm".

    # Parameters

    vocab : `Vocabulary`
        Must hold the word-piece vocabulary in `namespace` (see the "maelmo_wordpiece" vocabulary).
    encoder : `LmEncoder`
        Chosen by its `"type"`: `"maelmo_masked_elmo"`, the biLSTM stack of Masked ELMo (what a config
        without a type means, as every config before 0.2), or `"maelmo_transformer"`, BERT's blocks (BERT*
        of the paper's Tables 2-3, with `output_transform: "bert"`). The embedding size is its input size,
        which its output size must equal (the softmax is tied to the embedding). An encoder that carries no
        states reads every window on its own.
    masking : `MlmMasking`, optional (default = `MlmMasking(vocab)`, BERT's 15% with 80/10/10)
    num_mask_sets : `int`, optional (default = `1`)
        k, the number of mutually exclusive selections per batch (4 in the paper).
    mask_accumulation : `str`, optional (default = `"batched"`)
        `"batched"` or `"sequential"` (see above). Evaluation always runs the k copies batched.
    carry_states_in_evaluation : `bool`, optional (default = `False`)
        Carry states across batches at validation/evaluation too (needs the `maelmo_btbptt` loader there).
    namespace : `str`, optional (default = `"wordpieces"`)
    seed : `int`, optional (default = `13370`)
        Seeds the masking generators.
    output_transform : `str`, optional (default = `None`)
        `"bert"`: BERT's prediction-head transform (dense, GELU, LayerNorm) before the tied softmax, as BERT
        has, initialised as BERT initialises it; `None`: the encoder's output goes to the softmax directly,
        as in Masked ELMo.
    initializer : `InitializerApplicator`, optional
        Applied last. The embedding is initialised N(0, 0.02) (it is also the output softmax), the encoder
        as it initialises itself.
    """

    def __init__(
        self,
        vocab: Vocabulary,
        encoder: LmEncoder,
        masking: Optional[MlmMasking] = None,
        num_mask_sets: int = 1,
        mask_accumulation: str = "batched",
        carry_states_in_evaluation: bool = False,
        namespace: str = WORDPIECE_NAMESPACE,
        seed: int = 13370,
        output_transform: Optional[str] = None,
        initializer: Optional[InitializerApplicator] = None,
        **kwargs,
    ) -> None:
        if output_transform is not None and output_transform not in OUTPUT_TRANSFORMS:
            raise ConfigurationError(
                f"model.output_transform must be one of {OUTPUT_TRANSFORMS} or absent, got {output_transform!r}."
            )
        if encoder.get_output_dim() != encoder.get_input_dim():
            raise ConfigurationError(
                f"model.encoder: {encoder.configured_type} outputs {encoder.get_output_dim()} dimensions for "
                f"{encoder.get_input_dim()} in, and the softmax is tied to the embedding: make them equal."
            )
        if mask_accumulation not in MASK_ACCUMULATION_MODES:
            raise ConfigurationError(
                f"mask_accumulation must be one of {MASK_ACCUMULATION_MODES}, got {mask_accumulation!r}"
            )
        super().__init__(vocab, encoder, namespace, carry_states_in_evaluation, **kwargs)
        self._masking = masking or MlmMasking(vocab, namespace=namespace)
        self._num_mask_sets = num_mask_sets
        self._mask_accumulation = mask_accumulation
        # Fails at construction, not at the first batch, when k selections of p cannot be disjoint.
        self._masking.select(torch.zeros(1, 1, dtype=torch.long), num_mask_sets)
        self._seed = seed
        self._train_generator = torch.Generator().manual_seed(seed)
        self._eval_generator = torch.Generator().manual_seed(seed)
        # Sequential mask accumulation: what pass 0 drew, for passes 1 ... k-1 of the same batch.
        self._pass_cache: Optional[tuple[torch.Tensor, torch.Tensor, torch.Tensor, Any]] = None
        self._perplexity = TokenPerplexity()
        self._accuracy = CategoricalAccuracy()
        self._transform: Optional[BertPredictionHeadTransform] = None
        if output_transform == "bert":
            self._transform = _bert_transform(encoder)
        if initializer is not None:
            initializer(self)

    @property
    def has_bert_transform(self) -> bool:
        """Whether BERT's prediction-head transform comes before the softmax (`output_transform: "bert"`)."""
        return self._transform is not None

    @property
    def never_predicted(self) -> torch.Tensor:
        """
        A bool tensor over the vocabulary, True at the special word-pieces pre-training never made targets
        (`[CLS]`, `[SEP]`, `[PAD]`, `[UNK]`, `[MASK]`, any `[...]`): fill-mask and the exports never propose them.
        """
        return self._masking.is_special

    @property
    def mask_accumulation_passes(self) -> int:
        """
        How many forward/backward passes one update's batch takes in training: k with sequential mask
        accumulation, else 1. The "maelmo_ddp" accelerator reduces the gradients after the last of them only.
        """
        return self._num_mask_sets if self._mask_accumulation == "sequential" else 1

    def train(self, mode: bool = True) -> Self:
        if not mode:
            # Every validation/evaluation pass draws the same masks.
            self._eval_generator.manual_seed(self._seed)
        return super().train(mode)

    def resume_state(self) -> dict[str, Any]:
        return {**super().resume_state(), "mask_generator": self._train_generator.get_state()}

    def load_resume_state(self, state: dict[str, Any]) -> None:
        super().load_resume_state(state)
        self._train_generator.set_state(state["mask_generator"])

    def _batch_loss(
        self, token_ids: torch.Tensor, mask: torch.BoolTensor, batch: LmBatch
    ) -> dict[str, torch.Tensor]:
        """
        This model reads every field of the `LmBatch`: with `reset_states` it is stateful; `window_keys` (or
        `token_positions`) seed its masks in training; `mask_pass` is the copy a sequential mask-accumulation
        pass trains.

        # Returns

        loss : `torch.Tensor`
            Mean cross-entropy at the selected positions (averaged over the copies run; over all workers
            in distributed training), a scalar.
        num_masked : `torch.Tensor`
            How many positions were predicted, a scalar.
        """
        reset_states = batch.get("reset_states")
        mask_pass = batch.get("mask_pass")
        batch_size, num_tokens = token_ids.shape
        # Which of the k copies this pass runs (a sequential pass), or None: all k at once.
        copy = mask_pass if self._is_sequential(mask_pass) else None
        # Shape: (copies, batch_size, num_tokens), copies = k (batched) or 1 (one sequential pass)
        selected, corrupted, initial_states = self._copies_for_this_pass(
            token_ids, reset_states, batch.get("window_keys"), copy, batch.get("token_positions")
        )
        copies = selected.size(0)
        if initial_states is not None and copies > 1:
            initial_states = repeat_states(initial_states, copies)  # every copy starts from the same states
        # Shape: (copies * batch_size, num_tokens, dim); copy j is rows j*batch_size ... (j+1)*batch_size - 1
        representations, final_states = self._encoder(
            self._embedding(corrupted.view(copies * batch_size, num_tokens)),
            mask.repeat(copies, 1),
            initial_states,
        )
        if reset_states is not None and (copy is None or copy == 0):
            # The states carried on are those of the first copy (pass).
            self._states().update(first_rows(final_states, batch_size))
        # Shape: (num_selected, dim), in (copy, row, position) order
        hidden = representations[-1].view(copies, batch_size, num_tokens, -1)[selected]
        # Shape: (num_selected, vocab_size)
        logits = self._output_logits(hidden)
        targets = token_ids.expand(copies, -1, -1)[selected]
        losses = F.cross_entropy(logits, targets, reduction="none")
        loss = self._mean_over_copies(losses, selected, across_workers=self.training)
        self._perplexity(losses.detach().sum(), losses.numel())
        self._accuracy(logits.detach(), targets)
        return {"loss": loss, "num_masked": selected.sum()}

    def _is_sequential(self, mask_pass: Optional[int]) -> bool:
        sequential = self.training and self.mask_accumulation_passes > 1
        if sequential and mask_pass is None:
            raise ConfigurationError(
                "Sequential mask accumulation needs each batch k times: use the maelmo_btbptt data loader with "
                f"mask_accumulation_passes: {self._num_mask_sets} and trainer.num_gradient_accumulation_steps: "
                f"{self._num_mask_sets}, or set mask_accumulation: 'batched'."
            )
        if sequential and mask_pass is not None and not 0 <= mask_pass < self._num_mask_sets:
            raise ConfigurationError(
                f"Pass {mask_pass} of a batch, but the model has num_mask_sets: {self._num_mask_sets}: set the "
                f"maelmo_btbptt loader's mask_accumulation_passes to {self._num_mask_sets}."
            )
        if self.training and mask_pass is not None and not sequential:
            raise ConfigurationError(
                "The data loader repeats every batch for sequential mask accumulation (mask_accumulation_passes "
                "> 1), but the model runs the copies batched: set the model's mask_accumulation: 'sequential' "
                "and num_mask_sets to the number of passes, or mask_accumulation_passes: 1."
            )
        return sequential

    def _copies_for_this_pass(
        self,
        token_ids: torch.Tensor,
        reset_states: Optional[torch.Tensor],
        window_keys: Optional[torch.Tensor],
        mask_pass: Optional[int],
        token_positions: Optional[torch.Tensor] = None,
    ) -> tuple[torch.Tensor, torch.Tensor, Any]:
        """The selections, corrupted copies and initial states this pass runs (see the class docstring)."""
        if mask_pass is not None and mask_pass > 0:
            if self._pass_cache is None or not torch.equal(self._pass_cache[0], token_ids):
                raise ConfigurationError(
                    f"mask_pass {mask_pass} came without pass 0 of the same batch: the k passes of a batch must "
                    f"be consecutive (maelmo_btbptt with mask_accumulation_passes: {self._num_mask_sets})."
                )
            _, selected, corrupted, initial_states = self._pass_cache
            return selected[mask_pass : mask_pass + 1], corrupted[mask_pass : mask_pass + 1], initial_states
        selected, corrupted = self._draw_copies(token_ids, window_keys, token_positions)
        initial_states = self._initial_states(reset_states)
        if mask_pass is None:
            return selected, corrupted, initial_states
        self._pass_cache = (token_ids, selected, corrupted, initial_states)
        return selected[:1], corrupted[:1], initial_states

    def _draw_copies(
        self,
        token_ids: torch.Tensor,
        window_keys: Optional[torch.Tensor],
        token_positions: Optional[torch.Tensor] = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """k disjoint selections and, for each, a copy of the batch with only that selection corrupted."""
        generator: Draws
        if token_positions is not None:
            epochs = (
                window_keys[:, 0]
                if window_keys is not None
                else torch.zeros(len(token_ids), dtype=torch.long)
            )
            generator = PositionDraws(self._seed, epochs, token_positions)
        elif window_keys is not None:
            generator = KeyedDraws(self._seed, window_keys)
        elif self.training:
            generator = self._train_generator
        else:
            generator = self._eval_generator
        k = self._num_mask_sets
        # Shape: (batch_size, num_tokens), the selection index of each position or NOT_SELECTED
        selection = self._masking.select(token_ids, k, generator)
        # Shape: (k, batch_size, num_tokens)
        selected = torch.stack([selection == j for j in range(k)])
        corrupted = torch.stack([self._masking.corrupt(token_ids, selected[j], generator) for j in range(k)])
        return selected, corrupted

    @staticmethod
    def _mean_over_copies(losses: torch.Tensor, selected: torch.Tensor, across_workers: bool) -> torch.Tensor:
        """
        The mean of the per-copy mean losses; a copy with no selected position contributes 0. With
        `across_workers` under distributed training, each copy's mean is over the positions of every
        worker: this worker's sum over the global count, times the number of workers, since DDP averages
        the workers' gradients.
        """
        # Shape: (copies,)
        counts = selected.flatten(1).sum(dim=1)
        copy_of_position = torch.arange(selected.size(0), device=losses.device).repeat_interleave(counts)
        per_copy = torch.zeros(selected.size(0), device=losses.device, dtype=losses.dtype)
        per_copy = per_copy.index_add(0, copy_of_position, losses)
        scale = 1
        if across_workers and is_distributed():
            counts = counts.clone()
            torch.distributed.all_reduce(counts)  # every worker runs each forward: no rank waits alone
            scale = torch.distributed.get_world_size()
        return (per_copy / counts.clamp(min=1)).mean() * scale

    def _output_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        if self._transform is not None:
            hidden = self._transform(hidden)  # BERT's head: transform, then the decoder tied to the embedding
        return super()._output_logits(hidden)

    def get_metrics(self, reset: bool = False) -> dict[str, float]:
        # Python floats: numpy scalars in checkpoints break torch>=2.6's weights_only loading.
        return {
            "perplexity": float(self._perplexity.get_metric(reset)),
            "accuracy": float(self._accuracy.get_metric(reset)),
        }


def _bert_transform(encoder: LmEncoder) -> BertPredictionHeadTransform:
    """
    BERT's prediction-head transform over the encoder's output, configured by the encoder
    (`LmEncoder.output_head_config`) and initialised as BERT initialises a Linear layer (transformers'
    `_init_weights`: normal with the config's range, zero bias; its LayerNorm starts at 1 and 0 as built).
    """
    config = encoder.output_head_config()
    transform = BertPredictionHeadTransform(config)
    torch.nn.init.normal_(transform.dense.weight, std=config.initializer_range)
    torch.nn.init.zeros_(transform.dense.bias)
    return transform
