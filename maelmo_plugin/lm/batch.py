"""
The batch the word-piece language models read: the "maelmo_btbptt" loader's, documented here once. The two
models (`maelmo_masked_elmo_lm`, whatever its encoder, and `maelmo_elmo_lm`) take its fields as `forward`'s arguments,
and say only what they do with each.
"""

from typing import Required, TypedDict

import torch
from allennlp.data import TextFieldTensors


class LmBatch(TypedDict, total=False):
    """
    tokens : `TextFieldTensors`
        Word-piece windows, shape (batch_size, num_tokens): `{"tokens": {"tokens": ids}}`, as a `TextField` of
        the "maelmo_mlm_corpus" reader gives them, or the loader. The only field a batch must have.
    reset_states : `torch.Tensor` (bool)
        Shape (batch_size,): True where a row starts from zero states (its first window, or a new document's
        layout). Its presence makes a stateful model carry each row's LSTM states from one batch to the next.
    window_keys : `torch.Tensor` (long)
        Shape (batch_size, 3): each row's (epoch, global row, window) when stateful, (epoch, window, -1) when
        not. A masked model seeds each window's masks with it, so that the masks depend on the window's place
        in the stream, not on the worker or the batch that reads it.
    mask_pass : `int`
        With the loader's `mask_accumulation_passes: k > 1`: which of the k passes of the same batch this is
        (0 ... k-1), for sequential mask accumulation.
    token_positions : `torch.Tensor` (long)
        Shape (batch_size, num_tokens), with the loader's `mask_by_position`: each word-piece's index in the
        epoch's stream (-1 at padding), from which its mask is drawn alone (`PositionDraws`), so that the same
        word-pieces are masked whatever the windows' length.
    """

    tokens: Required[TextFieldTensors]
    reset_states: torch.Tensor
    window_keys: torch.Tensor
    mask_pass: int
    token_positions: torch.Tensor
