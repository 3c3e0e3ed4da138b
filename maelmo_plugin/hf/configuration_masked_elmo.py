"""
The Hugging Face configuration of Masked ELMo (Senay & Salin, 2020, https://arxiv.org/abs/2010.04302).

This file is copied verbatim into every export made by `allennlp maelmo-export`, next to
`modeling_masked_elmo.py`, and loaded from there with `trust_remote_code=True`: it must import nothing
but `transformers`, and work under transformers 4.x and 5.x alike.
"""

from typing import Optional

from transformers import PretrainedConfig

LSTM_IMPLEMENTATIONS = ("auto", "cpu", "torch")


class MaskedElmoConfig(PretrainedConfig):
    """
    The sizes and special tokens of a Masked ELMo encoder and its tied masked-LM softmax.

    Parameters:
        vocab_size: the number of word-pieces.
        hidden_size: d, the embedding size, which every layer keeps (each LSTM direction outputs d / 2).
        cell_size: memory cells per LSTM direction before the state projection (4096 in the paper).
        num_hidden_layers: L, the number of biLSTM layers (2 in the paper).
        hidden_dropout_prob: dropout on each layer's input (only in training mode).
        initializer_range: the standard deviation of the word-piece embedding at initialisation.
        pad_token_id, unk_token_id, cls_token_id, sep_token_id, mask_token_id: the special word-pieces.
        never_predicted_token_ids: every `[...]` entry of the vocabulary ([PAD], [UNK], [CLS], [SEP], [MASK],
            BERT's [unusedN]): pre-training never made them targets, so `MaskedElmoForMaskedLM` gives them
            no probability.
        tie_word_embeddings: the masked-LM decoder is the input embedding (always so in pre-training).
        classifier_dropout: dropout before the task heads' linear layer; None (the default) takes
            hidden_dropout_prob, as BERT does.
        lstm_implementation: what runs the biLSTM layers. "auto" (the default, and what a config.json
            without the field means): the CPU recurrence of `cpu_lstm_recurrence.py` on a CPU, torch's
            `nn.LSTM` (cuDNN) on a GPU. "cpu" or "torch" force either, on any device. Both compute the same
            values and gradients from the same parameters. torch's CPU LSTM with projection has no oneDNN
            kernel and warns; which is faster on a CPU depends on the CPU and the sizes.
    """

    model_type = "masked_elmo"

    def __init__(
        self,
        vocab_size: int = 28996,
        hidden_size: int = 768,
        cell_size: int = 4096,
        num_hidden_layers: int = 2,
        hidden_dropout_prob: float = 0.1,
        initializer_range: float = 0.02,
        pad_token_id: int = 0,
        unk_token_id: int = 100,
        cls_token_id: int = 101,
        sep_token_id: int = 102,
        mask_token_id: int = 103,
        never_predicted_token_ids: Optional[list[int]] = None,
        tie_word_embeddings: bool = True,
        classifier_dropout: Optional[float] = None,
        lstm_implementation: str = "auto",
        **kwargs,
    ) -> None:
        if hidden_size % 2:
            raise ValueError(
                f"hidden_size must be even (each LSTM direction outputs half), got {hidden_size}."
            )
        if lstm_implementation not in LSTM_IMPLEMENTATIONS:
            raise ValueError(
                f"lstm_implementation must be one of {LSTM_IMPLEMENTATIONS}, got {lstm_implementation!r}."
            )
        # Set after the base class, whose 4.x __init__ resets some of these ids (sep_token_id) to None.
        super().__init__(pad_token_id=pad_token_id, tie_word_embeddings=tie_word_embeddings, **kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.cell_size = cell_size
        self.num_hidden_layers = num_hidden_layers
        self.hidden_dropout_prob = hidden_dropout_prob
        self.initializer_range = initializer_range
        self.pad_token_id = pad_token_id
        self.unk_token_id = unk_token_id
        self.cls_token_id = cls_token_id
        self.sep_token_id = sep_token_id
        self.mask_token_id = mask_token_id
        if never_predicted_token_ids is None:
            never_predicted_token_ids = [
                pad_token_id,
                unk_token_id,
                cls_token_id,
                sep_token_id,
                mask_token_id,
            ]
        self.never_predicted_token_ids = sorted(set(never_predicted_token_ids))
        self.tie_word_embeddings = tie_word_embeddings
        self.classifier_dropout = classifier_dropout
        self.lstm_implementation = lstm_implementation

    def to_diff_dict(self) -> dict:
        # 4.x leaves out of config.json every value equal to its own default, tie_word_embeddings=True among
        # them; 5.x reads a missing one as False and would load the decoder untied and random, silently.
        diff = super().to_diff_dict()
        diff["tie_word_embeddings"] = self.tie_word_embeddings
        # Written even at its default, so that a user of the export sees the switch in config.json.
        diff["lstm_implementation"] = self.lstm_implementation
        return diff


# `save_pretrained` copies this file into the saved directory only for a class registered for an auto class,
# which not every transformers version does when it loads the class with `trust_remote_code=True` (4.49
# does not): the class registers itself, as the model classes do (`modeling_masked_elmo.py`).
MaskedElmoConfig.register_for_auto_class()
