from typing import Dict, Optional

import torch
import torch.nn.functional as F
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models import Model
from allennlp.nn import InitializerApplicator, util
from allennlp.training.metrics import CategoricalAccuracy, Perplexity

from maelmo_plugin.data.masking import MlmMasking
from maelmo_plugin.data.wordpiece import PAD, WORDPIECE_NAMESPACE
from maelmo_plugin.modules.masked_elmo_encoder import MaskedElmoEncoder


@Model.register("maelmo_masked_lm")
class MaskedElmoLanguageModel(Model):
    """
    Masked ELMo pre-training (Senay & Salin, 2020, https://arxiv.org/abs/2010.04302): BERT's masked-LM
    objective on a fully contextual biLSTM encoder, with the softmax tied to the input embedding.

    Masks are drawn inside `forward` for every batch (so every epoch sees new ones) from a generator seeded
    by `seed`. Validation and evaluation use a second generator that is re-seeded whenever the model is put
    in eval mode, so every validation pass masks the same positions and its perplexity is comparable.

    Logits are computed only at the selected positions: (masked tokens) x (vocabulary) instead of
    (all tokens) x (vocabulary), which is most of the softmax cost at a 29k vocabulary.

    Registered as a `Model` with name "maelmo_masked_lm".

    # Parameters

    vocab : `Vocabulary`
        Must hold the word-piece vocabulary in `namespace` (see the "maelmo_wordpiece" vocabulary).
    encoder : `MaskedElmoEncoder`
        The biLSTM stack; the embedding size is its `input_dim`.
    masking : `MlmMasking`, optional (default = `MlmMasking(vocab)`, BERT's 15% with 80/10/10)
    num_mask_sets : `int`, optional (default = `1`)
        Mask accumulation (paper 3.1): k mutually exclusive selections per batch; the k corrupted copies run
        as one batch of k x batch_size rows from the same initial states, and the loss is the mean of the k
        per-selection losses, so its gradient is the average of k separate passes' gradients.
    namespace : `str`, optional (default = `"wordpieces"`)
    seed : `int`, optional (default = `13370`)
        Seeds the masking generators.
    initializer : `InitializerApplicator`, optional
        The embedding is initialised N(0, 0.02) (it is also the output softmax), the LSTMs as torch does.
    """

    default_predictor = None

    def __init__(
        self,
        vocab: Vocabulary,
        encoder: MaskedElmoEncoder,
        masking: Optional[MlmMasking] = None,
        num_mask_sets: int = 1,
        namespace: str = WORDPIECE_NAMESPACE,
        seed: int = 13370,
        initializer: Optional[InitializerApplicator] = None,
        **kwargs,
    ) -> None:
        super().__init__(vocab, **kwargs)
        self._namespace = namespace
        self._encoder = encoder
        self._masking = masking or MlmMasking(vocab, namespace=namespace)
        self._num_mask_sets = num_mask_sets
        # Fails at construction, not at the first batch, when k selections of p cannot be disjoint.
        self._masking.select(torch.zeros(1, 1, dtype=torch.long), num_mask_sets)
        vocab_size = vocab.get_vocab_size(namespace)
        padding_index = vocab.get_token_index(PAD, namespace)
        self._embedding = torch.nn.Embedding(vocab_size, encoder.get_input_dim(), padding_idx=padding_index)
        torch.nn.init.normal_(self._embedding.weight, std=0.02)
        with torch.no_grad():
            self._embedding.weight[padding_index].zero_()
        self._output_bias = torch.nn.Parameter(torch.zeros(vocab_size))
        self._seed = seed
        self._train_generator = torch.Generator().manual_seed(seed)
        self._eval_generator = torch.Generator().manual_seed(seed)
        self._perplexity = Perplexity()
        self._accuracy = CategoricalAccuracy()
        if initializer is not None:
            initializer(self)

    def train(self, mode: bool = True) -> "MaskedElmoLanguageModel":
        if not mode:
            # Every validation/evaluation pass draws the same masks (see class docstring).
            self._eval_generator.manual_seed(self._seed)
        return super().train(mode)

    def forward(self, tokens: TextFieldTensors) -> Dict[str, torch.Tensor]:  # type: ignore
        """
        # Parameters

        tokens : `TextFieldTensors`
            From a `TextField` of word-pieces (the "maelmo_mlm_corpus" reader), shape (batch_size, num_tokens).

        # Returns

        loss : `torch.Tensor`
            Mean cross-entropy at the selected positions (averaged over the k selections), a scalar.
        num_masked : `torch.Tensor`
            How many positions were predicted in this batch, a scalar.
        """
        # Shape: (batch_size, num_tokens)
        token_ids = util.get_token_ids_from_text_field_tensors(tokens)
        mask = util.get_text_field_mask(tokens)
        generator = self._train_generator if self.training else self._eval_generator
        k = self._num_mask_sets
        # Shape: (batch_size, num_tokens), the selection index of each position or NOT_SELECTED
        selection = self._masking.select(token_ids, k, generator)
        # Shape: (k, batch_size, num_tokens): copy j has only selection j corrupted
        selected = torch.stack([selection == j for j in range(k)])
        corrupted = torch.stack([self._masking.corrupt(token_ids, selected[j], generator) for j in range(k)])
        batch_size, num_tokens = token_ids.shape
        # Shape: (k * batch_size, num_tokens, dim); copy j is rows j*batch_size ... (j+1)*batch_size - 1
        representations, _ = self._encoder(
            self._embedding(corrupted.view(k * batch_size, num_tokens)), mask.repeat(k, 1)
        )
        # Shape: (num_selected, dim), in (copy, row, position) order
        hidden = representations[-1].view(k, batch_size, num_tokens, -1)[selected]
        # Shape: (num_selected, vocab_size)
        logits = F.linear(hidden, self._embedding.weight, self._output_bias)
        targets = token_ids.expand(k, -1, -1)[selected]
        losses = F.cross_entropy(logits, targets, reduction="none")
        loss = self._mean_over_selections(losses, selected)
        self._perplexity(loss.detach())
        self._accuracy(logits.detach(), targets)
        return {"loss": loss, "num_masked": selected.sum()}

    @staticmethod
    def _mean_over_selections(losses: torch.Tensor, selected: torch.BoolTensor) -> torch.Tensor:
        """The mean of the k per-selection mean losses; a selection with no position contributes 0."""
        # Shape: (k,)
        counts = selected.flatten(1).sum(dim=1)
        set_of_position = torch.arange(selected.size(0), device=losses.device).repeat_interleave(counts)
        per_set = torch.zeros(selected.size(0), device=losses.device, dtype=losses.dtype)
        per_set = per_set.index_add(0, set_of_position, losses) / counts.clamp(min=1)
        return per_set.mean()

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        # Python floats: numpy scalars in checkpoints break torch>=2.6's weights_only loading.
        return {
            "perplexity": float(self._perplexity.get_metric(reset)),
            "accuracy": float(self._accuracy.get_metric(reset)),
        }
