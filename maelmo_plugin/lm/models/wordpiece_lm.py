import abc
from typing import Any, Optional, Self

import torch
import torch.nn.functional as F
from allennlp.common.checks import ConfigurationError
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models import Model
from allennlp.nn import util

from maelmo_files.common.special_tokens import PAD
from maelmo_plugin.lm.batch import LmBatch
from maelmo_plugin.lm.modules.carried_states import CarriedStates, map_states
from maelmo_plugin.lm.modules.lm_encoder import LmEncoder, ReducedPrecisionLmEncoder


class WordpieceLanguageModel(Model, abc.ABC):
    """
    What `maelmo_masked_elmo_lm` and `maelmo_elmo_lm` share (not registered itself):

    * the word-piece embedding, which is also the output softmax (tied, plus a bias), initialised
      N(0, 0.02) with a zero [PAD] row;
    * the LSTM states carried per row across truncated-BPTT windows when batches come with
      `reset_states`, separately for training and evaluation (evaluation starts each pass afresh);
    * `representations()`, the L + 1 layers of unmasked input from zero states, which the
      `maelmo_masked_elmo_embedder` token embedder and the predictors read;
    * `forward`, which takes the loader's batch (an `LmBatch`) and hands it to the model's `_batch_loss`.

    `encoder` is any registered `LmEncoder` (`maelmo_plugin/lm/modules/lm_encoder.py`), chosen by its
    `"type"` in the config; an encoder that carries no states (the transformer) reads every window on its
    own, and `forward` then drops the loader's `reset_states`.
    """

    def __init__(
        self,
        vocab: Vocabulary,
        encoder: LmEncoder,
        namespace: str,
        carry_states_in_evaluation: bool,
        **kwargs,
    ) -> None:
        super().__init__(vocab, **kwargs)
        if carry_states_in_evaluation and not encoder.carries_states:
            raise ConfigurationError(
                f"model.carry_states_in_evaluation: this model's encoder, {encoder.configured_type}, reads every "
                f"window on its own and carries no states: remove it."
            )
        self._namespace = namespace
        self._encoder: LmEncoder = encoder
        self._carry_states_in_evaluation = carry_states_in_evaluation
        vocab_size = vocab.get_vocab_size(namespace)
        padding_index = vocab.get_token_index(PAD, namespace)
        self._embedding = torch.nn.Embedding(vocab_size, encoder.get_input_dim(), padding_idx=padding_index)
        torch.nn.init.normal_(self._embedding.weight, std=0.02)
        with torch.no_grad():
            self._embedding.weight[padding_index].zero_()
        self._output_bias = torch.nn.Parameter(torch.zeros(vocab_size))
        self._train_states = CarriedStates()
        self._eval_states = CarriedStates()

    @property
    def namespace(self) -> str:
        """The vocabulary namespace of the word-pieces (a constructor option, "wordpieces" by default)."""
        return self._namespace

    @property
    def carries_states(self) -> bool:
        """Whether the encoder carries states across windows (else `forward` drops `reset_states`)."""
        return self._encoder.carries_states

    @property
    def encoder(self) -> LmEncoder:
        """The encoder, for the exports and the tools that read it (read-only: the model owns it)."""
        return self._encoder

    @property
    def embedding(self) -> torch.nn.Embedding:
        """The word-piece embedding, tied with the output softmax."""
        return self._embedding

    def forward(
        self,
        tokens: TextFieldTensors,
        reset_states: Optional[torch.BoolTensor] = None,
        window_keys: Optional[torch.LongTensor] = None,
        mask_pass: Optional[int] = None,
        token_positions: Optional[torch.LongTensor] = None,
    ) -> dict[str, torch.Tensor]:
        """
        # Parameters

        The fields of an `LmBatch` (`maelmo_plugin/lm/batch.py`), as the `maelmo_btbptt` loader gives them;
        each model's `_batch_loss` says what it does with them.

        # Returns

        loss : `torch.Tensor`
            The model's training loss, a scalar; `_batch_loss` says what else the model returns.
        """
        batch = LmBatch(tokens=tokens)
        if reset_states is not None and self.carries_states:
            batch["reset_states"] = reset_states
        if window_keys is not None:
            batch["window_keys"] = window_keys
        if mask_pass is not None:
            batch["mask_pass"] = mask_pass
        if token_positions is not None:
            batch["token_positions"] = token_positions
        # Shape: (batch_size, num_tokens) each; the mask is False at padding
        token_ids = util.get_token_ids_from_text_field_tensors(tokens)
        return self._batch_loss(token_ids, util.get_text_field_mask(tokens), batch)

    @abc.abstractmethod
    def _batch_loss(
        self, token_ids: torch.Tensor, mask: torch.BoolTensor, batch: LmBatch
    ) -> dict[str, torch.Tensor]:
        """The model's outputs on one batch: `token_ids` and `mask` are read from `batch["tokens"]`."""

    def train(self, mode: bool = True) -> Self:
        if not mode:
            self._eval_states.clear()  # every validation/evaluation pass starts from zero states
        return super().train(mode)

    def resume_state(self) -> dict[str, Any]:
        """
        What a checkpoint needs beyond the weights to continue training exactly (the `maelmo_exact_resume`
        callback saves it): the LSTM states carried into the next batch.
        """
        return {"train_states": self._train_states.states}

    def load_resume_state(self, state: dict[str, Any]) -> None:
        device = self._embedding.weight.device
        self._train_states.states = map_states(lambda tensor: tensor.to(device), state["train_states"])

    def representations(
        self, token_ids: torch.Tensor, mask: torch.Tensor, precision: str = "fp32"
    ) -> list[torch.Tensor]:
        """
        The L + 1 representations h_0 ... h_L of unmasked input from zero states, each (batch_size,
        num_tokens, `representation_dim()`). `precision` "int8" or "bf16" runs the encoder's products in
        that precision, for inference, where `reduced_precision_refusal()` is None.
        """
        embeddings = self._embedding(token_ids)
        if precision == "fp32":
            representations, _ = self._encoder(embeddings, mask)
            return representations
        if not isinstance(self._encoder, ReducedPrecisionLmEncoder):
            raise ValueError(f"precision {precision!r} is not available: {self.reduced_precision_refusal()}.")
        representations, _ = self._encoder(embeddings, mask, precision=precision)
        return representations

    def reduced_precision_refusal(self) -> Optional[str]:
        """Why `representations` cannot reduce its precision here (see its docstring), or None if it can."""
        if not isinstance(self._encoder, ReducedPrecisionLmEncoder):
            return f"this model's encoder, {self._encoder.configured_type}, has no reduced precision"
        return self._encoder.reduced_precision_refusal(self._embedding.weight.device)

    def num_representation_layers(self) -> int:
        return self._encoder.num_layers + 1

    def representation_dim(self) -> int:
        return self._encoder.get_output_dim()

    def _output_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The tied softmax's logits: (num_positions, dim) -> (num_positions, vocab_size)."""
        return F.linear(hidden, self._embedding.weight, self._output_bias)

    def _states(self) -> CarriedStates:
        return self._train_states if self.training else self._eval_states

    def _initial_states(self, reset_states: Optional[torch.Tensor]) -> Any:
        if reset_states is None or (not self.training and not self._carry_states_in_evaluation):
            return None
        return self._states().initial(reset_states)
