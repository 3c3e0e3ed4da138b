"""
Masked ELMo (Senay & Salin, 2020, https://arxiv.org/abs/2010.04302) as a Hugging Face model: a fully
contextual biLSTM encoder, its tied masked-LM softmax, and sequence- and token-classification heads.

    h_0 = embeddings                                                                  (B, T, d)
    h_l = [LayerNorm(fwd_l(dropout(h_{l-1}))) ; LayerNorm(bwd_l(dropout(h_{l-1})))] + h_{l-1}   l = 1..L

Each direction is an LSTM with `cell_size` memory cells whose state is projected to d / 2 (one
bidirectional `nn.LSTM(proj_size=d / 2)` per layer); each direction's half has its own LayerNorm.

This file is copied verbatim into every export made by `allennlp maelmo-export` (maelmo_plugin) and loaded
from there with `trust_remote_code=True`, with `configuration_masked_elmo.py` and `cpu_lstm_recurrence.py`
beside it: all three import only `torch` and `transformers`, work under transformers 4.x and 5.x, and
reproduce the plugin's `MaskedElmoEncoder` (cell "fused") exactly. `config.lstm_implementation` chooses
what runs the LSTMs: by default the CPU recurrence on a CPU (the same values and gradients from the same
`nn.LSTM` parameters, without torch's oneDNN warning), `nn.LSTM` (cuDNN) on a GPU. Rows must be
right-padded (the tokenizer's default); a padded row's vectors equal those of the row alone.
"""

from typing import Optional, Union

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from transformers import PreTrainedModel
from transformers.modeling_outputs import (
    BaseModelOutput,
    MaskedLMOutput,
    ModelOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)

from .configuration_masked_elmo import MaskedElmoConfig
from .cpu_lstm_recurrence import cpu_bidirectional_lstm


class MaskedElmoLayerNorm(nn.Module):
    """LayerNorm over each direction's half of a biLSTM output separately, each with its own gain and bias."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self.weight = nn.Parameter(torch.ones(2, size))
        self.bias = nn.Parameter(torch.zeros(2, size))

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        # Shape: (batch_size, num_tokens, 2, size): [..., 0, :] is the forward direction, [..., 1, :] backward
        halves = inputs.unflatten(-1, (2, self.size))
        normalized = nn.functional.layer_norm(halves, (self.size,)) * self.weight + self.bias
        return normalized.flatten(-2)


class MaskedElmoLayer(nn.Module):
    """One biLSTM layer: dropout on its input, biLSTM with projection, per-direction LayerNorm, skip."""

    def __init__(self, config: MaskedElmoConfig) -> None:
        super().__init__()
        # Kept, not copied: `model.config.lstm_implementation = ...` switches a loaded model's recurrence.
        self.config = config
        dim = config.hidden_size
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.lstm = nn.LSTM(dim, config.cell_size, proj_size=dim // 2, batch_first=True, bidirectional=True)
        self.norm = MaskedElmoLayerNorm(dim // 2)

    def forward(self, inputs: torch.Tensor, lengths: Optional[torch.Tensor]) -> torch.Tensor:
        # The skip connection adds the clean input; only the LSTM reads the dropped-out copy.
        lstm_inputs = self.dropout(inputs)
        implementation = self.config.lstm_implementation
        if implementation == "cpu" or (implementation == "auto" and inputs.device.type == "cpu"):
            # Shape: (batch_size, num_tokens, dim), zero at padding; padded rows run as packed ones do.
            outputs, _ = cpu_bidirectional_lstm(self.lstm, lstm_inputs, lengths)
        elif lengths is None:
            # Shape: (batch_size, num_tokens, dim)
            outputs, _ = self.lstm(lstm_inputs)
        else:
            # Packing makes the backward direction start at each row's last real token, not at padding.
            packed = pack_padded_sequence(lstm_inputs, lengths.cpu(), batch_first=True, enforce_sorted=False)
            packed_outputs, _ = self.lstm(packed)
            outputs, _ = pad_packed_sequence(packed_outputs, batch_first=True, total_length=inputs.size(1))
        return self.norm(outputs) + inputs


class MaskedElmoPreTrainedModel(PreTrainedModel):
    """Ties the Masked ELMo classes to their config and initialises their weights."""

    config_class = MaskedElmoConfig
    base_model_prefix = "masked_elmo"

    def _init_weights(self, module: nn.Module) -> None:
        # `torch.nn.init` calls only: 5.x guards them so that loaded weights are not initialised again.
        if isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=self.config.initializer_range)
            # A slice loses 5.x's "already loaded" flag: check it on the whole matrix, as transformers does.
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                nn.init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, nn.LSTM):
            # torch's own LSTM initialisation, written out: 4.x keeps it, 5.x's default would use Xavier.
            bound = 1.0 / module.hidden_size**0.5
            for parameter in module.parameters():
                nn.init.uniform_(parameter, -bound, bound)
        elif isinstance(module, MaskedElmoLayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, MaskedElmoScalarMix):
            # Equal layer weights and unit scale: the mix starts as the plain average of h_0 ... h_L.
            nn.init.zeros_(module.weights)
            nn.init.ones_(module.scale)
        elif isinstance(module, nn.Linear):
            # The masked-LM decoder's weight is the input embedding unless the config unties them; a task
            # head's classifier is initialised as BERT's.
            if not (self.config.tie_word_embeddings and module is self.get_output_embeddings()):
                nn.init.normal_(module.weight, mean=0.0, std=self.config.initializer_range)
            nn.init.zeros_(module.bias)


class MaskedElmoModel(MaskedElmoPreTrainedModel):
    """
    The Masked ELMo encoder. `last_hidden_state` is h_L; with `output_hidden_states`, `hidden_states` holds
    all L + 1 representations h_0 (the word-piece embeddings) ... h_L, the layers ELMo-style users mix.
    """

    # Loaded from a masked-LM checkpoint, the encoder leaves out the head's bias: expected, no warning.
    _keys_to_ignore_on_load_unexpected = [r"decoder\."]

    def __init__(self, config: MaskedElmoConfig) -> None:
        super().__init__(config)
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.layers = nn.ModuleList(MaskedElmoLayer(config) for _ in range(config.num_hidden_layers))
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings = value

    def forward(
        self,
        input_ids: Optional[torch.Tensor] = None,
        attention_mask: Optional[torch.Tensor] = None,
        token_type_ids: Optional[torch.Tensor] = None,
        inputs_embeds: Optional[torch.Tensor] = None,
        output_hidden_states: Optional[bool] = None,
        return_dict: Optional[bool] = None,
    ) -> Union[tuple[torch.Tensor, ...], BaseModelOutput]:
        """
        `input_ids` (batch_size, num_tokens) or `inputs_embeds` (batch_size, num_tokens, hidden_size);
        `attention_mask` (batch_size, num_tokens), 1 at real tokens, 0 at padding, which must come after a
        row's tokens. `token_type_ids` is accepted (BERT tokenizers return it) and ignored: there are none.
        """
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        return_dict = return_dict if return_dict is not None else self.config.return_dict
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("Give exactly one of input_ids and inputs_embeds.")
        # Shape: (batch_size, num_tokens, dim)
        embeddings = self.embeddings(input_ids) if inputs_embeds is None else inputs_embeds
        lengths = _lengths(attention_mask)
        representations = [embeddings]
        for layer in self.layers:
            representations.append(layer(representations[-1], lengths))
        if lengths is not None and attention_mask is not None:  # (lengths come from the mask)
            keep = attention_mask.unsqueeze(-1).to(embeddings.dtype)
            representations = [representation * keep for representation in representations]
        hidden_states = tuple(representations) if output_hidden_states else None
        if not return_dict:
            return tuple(value for value in (representations[-1], hidden_states) if value is not None)
        return BaseModelOutput(last_hidden_state=representations[-1], hidden_states=hidden_states)


def _lengths(attention_mask: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """Each row's number of real tokens, or None when nothing is padded."""
    if attention_mask is None or bool(attention_mask.bool().all()):
        return None
    mask = attention_mask.bool()
    lengths = mask.sum(dim=1)
    positions = torch.arange(mask.size(1), device=mask.device)
    if not torch.equal(mask, positions < lengths.unsqueeze(1)):
        raise ValueError(
            "Masked ELMo needs right-padded rows (attention_mask 1...1 0...0): an LSTM reads the padding "
            "of a left-padded row. Load the tokenizer with padding_side='right' (its default)."
        )
    # A row of padding only still runs one step, as in the plugin; its vectors are then zeroed.
    return lengths.clamp(min=1)


class MaskedElmoHeadModel(MaskedElmoPreTrainedModel):
    """
    What every head (the masked LM and the task heads) shares: the encoder, `masked_elmo`, and `forward`,
    which runs it and returns the head's logits, its loss given `labels`, and the L + 1 representations when
    asked for. A head defines `output_class`, `_logits(hidden_states, attention_mask)` and
    `_loss(logits, labels)`, and calls `post_init()` once it has built its own modules.
    """

    output_class: type[ModelOutput]

    def __init__(self, config: MaskedElmoConfig) -> None:
        super().__init__(config)
        self.masked_elmo = MaskedElmoModel(config)

    def forward(
        self,
        input_ids: Optional[torch.Tensor] = None,
        attention_mask: Optional[torch.Tensor] = None,
        token_type_ids: Optional[torch.Tensor] = None,
        inputs_embeds: Optional[torch.Tensor] = None,
        labels: Optional[torch.Tensor] = None,
        output_hidden_states: Optional[bool] = None,
        return_dict: Optional[bool] = None,
    ) -> Union[tuple[torch.Tensor, ...], ModelOutput]:
        """
        The encoder's arguments (`token_type_ids` accepted and ignored), and `labels` for the loss. Named
        one by one, without `**kwargs`: `Trainer` keeps exactly these columns and, as no `**kwargs` takes
        its `num_items_in_batch`, divides the loss by the gradient-accumulation steps itself.
        """
        # All L + 1 representations, whatever the caller asked for: the encoder keeps them all anyway.
        outputs = self.masked_elmo(
            input_ids,
            attention_mask=attention_mask,
            inputs_embeds=inputs_embeds,
            output_hidden_states=True,
            return_dict=True,
        )
        logits = self._logits(outputs.hidden_states, attention_mask)
        loss = None if labels is None else self._loss(logits, labels.to(logits.device))
        if output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states:
            hidden_states = outputs.hidden_states
        else:
            hidden_states = None
        if not (return_dict if return_dict is not None else self.config.return_dict):
            return tuple(value for value in (loss, logits, hidden_states) if value is not None)
        return self.output_class(loss=loss, logits=logits, hidden_states=hidden_states)


class MaskedElmoForMaskedLM(MaskedElmoHeadModel):
    """
    Masked ELMo with its pre-training head: the tied softmax `h_L @ E^T + b` at every position. The
    `never_predicted_token_ids` of the config (the `[...]` entries) get the dtype's minimum logit, so their
    probability is zero and fill-mask never proposes them; pre-training never made them targets.
    `labels` (batch_size, num_tokens) give the loss over the positions whose label is not -100.
    """

    _tied_weights_keys = {"decoder.weight": "masked_elmo.embeddings.weight"}
    output_class = MaskedLMOutput

    def __init__(self, config: MaskedElmoConfig) -> None:
        super().__init__(config)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.decoder

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.decoder = new_embeddings

    def _logits(
        self, hidden_states: tuple[torch.Tensor, ...], attention_mask: Optional[torch.Tensor]
    ) -> torch.Tensor:
        # Shape: (batch_size, num_tokens, vocab_size)
        logits = self.decoder(hidden_states[-1])
        return logits.index_fill(-1, self._never_predicted(logits.device), torch.finfo(logits.dtype).min)

    def _loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if bool(torch.isin(labels, self._never_predicted(labels.device)).any()):
            raise ValueError(
                "labels hold a special token (one of config.never_predicted_token_ids), which Masked "
                "ELMo never predicts: give those positions -100, as DataCollatorForLanguageModeling does."
            )
        return nn.functional.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=-100)

    def _never_predicted(self, device: torch.device) -> torch.Tensor:
        return torch.tensor(self.config.never_predicted_token_ids, dtype=torch.long, device=device)


class MaskedElmoScalarMix(nn.Module):
    """
    ELMo's layer combination (Peters et al., 2018, equation 1; no layer norm, ELMo's default): gamma * sum_l
    softmax(w)_l h_l over h_0 ... h_L. gamma is `scale`: 4.x renames a parameter `gamma` to `weight` on load.
    """

    def __init__(self, num_representations: int) -> None:
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(num_representations))
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, representations: tuple[torch.Tensor, ...]) -> torch.Tensor:
        # Shape: (L + 1, batch_size, num_tokens, dim) -> (batch_size, num_tokens, dim)
        weights = torch.softmax(self.weights, dim=0).to(representations[0].dtype)
        return self.scale * torch.einsum("l,lbtd->btd", weights, torch.stack(representations))


class MaskedElmoClassifierBase(MaskedElmoHeadModel):
    """
    What both task heads share: a learned scalar mix of the encoder's L + 1 representations (the way ELMo
    and the plugin's GLUE protocol use the encoder, rather than h_L alone), dropout and a linear layer. A
    head defines `output_class`, `_logits(hidden_states, attention_mask)` and `_loss(logits, labels)`.
    """

    # Loaded from a masked-LM export, a head leaves out the pre-training softmax: expected, no warning.
    _keys_to_ignore_on_load_unexpected = [r"decoder\."]

    def __init__(self, config: MaskedElmoConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.scalar_mix = MaskedElmoScalarMix(config.num_hidden_layers + 1)
        dropout = config.classifier_dropout
        self.dropout = nn.Dropout(config.hidden_dropout_prob if dropout is None else dropout)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()


class MaskedElmoForSequenceClassification(MaskedElmoClassifierBase):
    """
    A sentence or sentence-pair classifier or regressor: the scalar mix, MAX pooling over the real tokens
    (attention_mask 1, [CLS] and [SEP] included; padding excluded), dropout, linear. A pair is one sequence,
    the tokenizer's `[CLS] a [SEP] b [SEP]`, which the biLSTM reads across; `token_type_ids` are ignored.

    Why max pooling: Masked ELMo has no sentence-level objective (BERT's [CLS] has next-sentence prediction),
    and the plugin's GLUE protocol (jiant's) max-pools too. Unlike jiant's head, it has no task BiLSTM or MLP:
    BERT's dropout + linear, so that `Trainer` and the `text-classification` pipeline work unchanged.

    `labels` (batch_size,) or (batch_size, num_labels) give the loss, as in BERT: `config.problem_type`
    "regression" (mean squared error; num_labels 1, e.g. STS-B), "single_label_classification"
    (cross-entropy) or "multi_label_classification" (binary cross-entropy on float multi-hot labels);
    unset, it is inferred from num_labels and the labels' dtype at the first loss.
    """

    output_class = SequenceClassifierOutput

    def _logits(
        self, hidden_states: tuple[torch.Tensor, ...], attention_mask: Optional[torch.Tensor]
    ) -> torch.Tensor:
        # Shape: (batch_size, num_tokens, dim), zero at padding
        mixed = self.scalar_mix(hidden_states)
        if attention_mask is not None:
            # Padding is zero in the mix, which could exceed every real (negative) value: exclude it.
            padding = ~attention_mask.bool().unsqueeze(-1)
            mixed = mixed.masked_fill(padding, torch.finfo(mixed.dtype).min)
        # Shape: (batch_size, num_labels)
        return self.classifier(self.dropout(mixed.max(dim=1).values))

    def _loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        # BertForSequenceClassification's inference of the problem type, and its losses.
        if self.config.problem_type is None:
            if self.num_labels == 1:
                self.config.problem_type = "regression"
            elif labels.dtype in (torch.long, torch.int):
                self.config.problem_type = "single_label_classification"
            else:
                self.config.problem_type = "multi_label_classification"
        logits = logits.float()
        if self.config.problem_type == "regression":
            if self.num_labels == 1:
                return nn.functional.mse_loss(logits.squeeze(-1), labels.squeeze(-1).float())
            return nn.functional.mse_loss(logits, labels.float())
        if self.config.problem_type == "single_label_classification":
            return nn.functional.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
        # "multi_label_classification": the config refuses any other problem type when it is built.
        return nn.functional.binary_cross_entropy_with_logits(logits, labels.float())


class MaskedElmoForTokenClassification(MaskedElmoClassifierBase):
    """
    A tagger (NER, POS): the scalar mix at every position, dropout, linear. `labels` (batch_size,
    num_tokens) give the cross-entropy over the positions whose label is not -100 (label a word's first
    word-piece and give -100 to the rest and to [CLS] / [SEP], as transformers' run_ner.py does).
    """

    output_class = TokenClassifierOutput

    def _logits(
        self, hidden_states: tuple[torch.Tensor, ...], attention_mask: Optional[torch.Tensor]
    ) -> torch.Tensor:
        # Shape: (batch_size, num_tokens, num_labels)
        return self.classifier(self.dropout(self.scalar_mix(hidden_states)))

    def _loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=-100)


def _name_in_pipeline_mappings() -> None:
    """
    The text- and token-classification pipelines check a model's class name against transformers' own
    models for their task (`MODEL_FOR_..._MAPPING_NAMES`) and, missing it, log an error listing them all,
    then work all the same. Naming these classes there stops that; elsewhere transformers only looks names
    up in these tables or pairs them with `CONFIG_MAPPING_NAMES`, which lacks this model type.
    """
    from transformers.models.auto import modeling_auto

    for table, model_class in (
        ("MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES", MaskedElmoForSequenceClassification),
        ("MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES", MaskedElmoForTokenClassification),
    ):
        getattr(modeling_auto, table).setdefault(MaskedElmoConfig.model_type, model_class.__name__)


# The auto class that loads each model class: the export's `auto_map` (`maelmo_plugin/hf/export.py` writes
# it from this table). Each class registers itself for it: `save_pretrained` copies a model's module files
# (this one and the two it imports) only for a registered class, and loading with `trust_remote_code=True`
# registers the loaded class under transformers 4.43 and 5.x but not under 4.49 (Python 3.13 and 3.14
# here), nor, under any, the encoder inside a masked LM or a task head (`model.masked_elmo`).
AUTO_CLASSES = {
    "AutoModel": MaskedElmoModel,
    "AutoModelForMaskedLM": MaskedElmoForMaskedLM,
    "AutoModelForSequenceClassification": MaskedElmoForSequenceClassification,
    "AutoModelForTokenClassification": MaskedElmoForTokenClassification,
}
for _auto_class, _model_class in AUTO_CLASSES.items():
    _model_class.register_for_auto_class(_auto_class)

_name_in_pipeline_mappings()
