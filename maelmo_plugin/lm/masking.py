"""
BERT's masked-LM corruption (Devlin et al., 2019), as used by Masked ELMo (paper section 3), drawn on
the fly for every batch so that each epoch sees new masks.

Selection and corruption are separate steps so that mask accumulation (paper 3.1) can draw `num_sets`
mutually exclusive selections from one uniform draw:

    u ~ U(0, 1) per position        set j = positions with  j*p <= u < (j+1)*p   (j < num_sets)

    u:        0.03  0.41  0.22  0.97  0.08  0.18  0.29  0.55
    set 0:     x                       x                        (u < 0.15)
    set 1:                 x                 x                  (0.15 <= u < 0.30)
    none:           x                                    x      (and every special token)

Each set holds a fraction p of the maskable tokens in expectation (Bernoulli selection per token, as
HF's data collator does, rather than BERT's exact count per sequence), and the sets are disjoint by
construction. Within a selection, 80% become [MASK], 10% a random non-special word-piece, 10% stay.

The draws come from a `torch.Generator` for the whole batch; from `KeyedDraws`: one generator per row,
seeded by the row's place in the stream, so that a window gets the same masks whichever worker reads it; or
from `PositionDraws`: one draw per word-piece, keyed by its place in the stream, so that the same word-pieces
are masked however the stream is cut into windows (models trained on windows of different lengths, each
scored on its own windows, then predict the same tokens).
"""

import hashlib
from collections.abc import Sequence
from typing import Union

import numpy as np
import torch
from allennlp.common import FromParams
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary

from maelmo_files.common.special_tokens import MASK
from maelmo_plugin.common.wordpiece import WORDPIECE_NAMESPACE

NOT_SELECTED = -1


class KeyedDraws:
    """
    A batch's random draws made row by row, each row from its own generator seeded by `(seed, *key)`, where
    the key is the row's place in the epoch's stream (the `maelmo_btbptt` loader's `window_keys`: epoch,
    global row, window). The draws of a row then depend on nothing else: not on the rank of the worker
    that holds the row, nor on the other rows of its batch, so W workers mask exactly as one does.

    # Parameters

    seed : `int`
    keys : `torch.LongTensor`
        Shape (batch_size, key_size), one key per row.
    """

    def __init__(self, seed: int, keys: torch.Tensor) -> None:
        self._generators = [torch.Generator().manual_seed(row_seed(seed, key)) for key in keys.tolist()]

    def rand(self, shape: Sequence[int]) -> torch.Tensor:
        return torch.stack([torch.rand(tuple(shape[1:]), generator=row) for row in self._generators])

    def randint(self, high: int, shape: Sequence[int]) -> torch.Tensor:
        return torch.stack([torch.randint(high, tuple(shape[1:]), generator=row) for row in self._generators])


def row_seed(seed: int, key: Sequence[Union[int, str]]) -> int:
    """A 63-bit seed from `seed` and a key, the same in every process and Python version (unlike `hash`)."""
    text = "/".join(str(part) for part in (seed, *key))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 1


class PositionDraws:
    """
    A batch's random draws made word-piece by word-piece, each a hash of `(seed, epoch key, position in the
    stream, which draw)`: a word-piece gets the same draws, hence the same mask, whatever window, row, batch
    or worker it falls in. The `maelmo_btbptt` loader gives the positions with `mask_by_position: true`.

    # Parameters

    seed : `int`
    epoch_keys : `torch.LongTensor`
        Shape (batch_size,): the epoch part of each row's `window_keys` (0 for every unshuffled pass).
    positions : `torch.LongTensor`
        Shape (batch_size, num_tokens): each word-piece's index in the epoch's stream (-1 at padding).
    """

    def __init__(self, seed: int, epoch_keys: torch.Tensor, positions: torch.Tensor) -> None:
        # Shape: (batch_size, num_tokens), unsigned: numpy's uint64 arithmetic wraps, as the hash needs.
        rows = np.array([row_seed(seed, [key, "positions"]) for key in epoch_keys.tolist()], dtype=np.uint64)
        self._keys = rows[:, None] ^ _splitmix64(positions.cpu().numpy().astype(np.uint64))
        self._draws = 0

    def _bits(self, shape: Sequence[int]) -> np.ndarray:
        if tuple(shape) != self._keys.shape:
            raise ValueError(f"draws of shape {tuple(shape)} asked of positions of shape {self._keys.shape}")
        self._draws += 1  # every draw of the masking (selection, 80/10/10, replacement) its own stream
        with np.errstate(over="ignore"):
            return _splitmix64(self._keys + np.uint64(self._draws) * _GOLDEN)

    def rand(self, shape: Sequence[int]) -> torch.Tensor:
        # The top 24 bits: uniform on [0, 1) in float32's resolution, never 1.0.
        return torch.from_numpy(
            (self._bits(shape) >> np.uint64(40)).astype(np.float32) * np.float32(2.0**-24)
        )

    def randint(self, high: int, shape: Sequence[int]) -> torch.Tensor:
        return torch.from_numpy((self._bits(shape) % np.uint64(high)).astype(np.int64))


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(values: np.ndarray) -> np.ndarray:
    """SplitMix64's output function (Steele et al., 2014): a bijective 64-bit mix, uint64 in and out."""
    with np.errstate(over="ignore"):
        z = values + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


Draws = Union[torch.Generator, KeyedDraws, PositionDraws, None]


def _rand(shape: Sequence[int], draws: Draws) -> torch.Tensor:
    if isinstance(draws, (KeyedDraws, PositionDraws)):
        return draws.rand(shape)
    return torch.rand(tuple(shape), generator=draws)


def _randint(high: int, shape: Sequence[int], draws: Draws) -> torch.Tensor:
    if isinstance(draws, (KeyedDraws, PositionDraws)):
        return draws.randint(high, shape)
    return torch.randint(high, tuple(shape), generator=draws)


class MlmMasking(FromParams):
    """
    Draws masked-LM selections and corrupts the selected word-pieces.

    Special tokens (every `[...]` entry: [PAD], [CLS], [SEP], [MASK], [UNK], BERT's [unusedN]) are never
    selected, and never drawn as random replacements: predicting [UNK] or a separator teaches nothing.

    # Parameters

    vocab : `Vocabulary`
        Passed by AllenNLP; the word-piece namespace must hold [MASK].
    namespace : `str`, optional (default = `"wordpieces"`)
    probability : `float`, optional (default = `0.15`)
        Fraction of maskable tokens in each selection (the paper's m).
    mask_fraction : `float`, optional (default = `0.8`)
        Fraction of selected tokens replaced by [MASK].
    random_fraction : `float`, optional (default = `0.1`)
        Fraction of selected tokens replaced by a random non-special word-piece; the rest stay unchanged.
    """

    def __init__(
        self,
        vocab: Vocabulary,
        namespace: str = WORDPIECE_NAMESPACE,
        probability: float = 0.15,
        mask_fraction: float = 0.8,
        random_fraction: float = 0.1,
    ) -> None:
        if not 0.0 < probability <= 1.0:
            raise ConfigurationError(f"model.masking.probability must be in (0, 1], got {probability}.")
        if mask_fraction < 0 or random_fraction < 0 or mask_fraction + random_fraction > 1.0:
            raise ConfigurationError(
                f"model.masking.mask_fraction ({mask_fraction}) + model.masking.random_fraction "
                f"({random_fraction}) must be within [0, 1]."
            )
        self.probability = probability
        self.mask_fraction = mask_fraction
        self.random_fraction = random_fraction
        token_to_index = vocab.get_token_to_index_vocabulary(namespace)
        if MASK not in token_to_index:
            raise ConfigurationError(f"The vocabulary namespace {namespace!r} has no {MASK} entry.")
        self.mask_id = token_to_index[MASK]
        # Lookup tables stay on the CPU, where the masks are drawn.
        special = torch.zeros(vocab.get_vocab_size(namespace), dtype=torch.bool, device="cpu")
        for token, index in token_to_index.items():
            special[index] = token.startswith("[") and token.endswith("]")
        self.is_special = special
        self.replacement_ids = (~special).nonzero().squeeze(1)
        if len(self.replacement_ids) == 0:
            raise ConfigurationError(f"The vocabulary namespace {namespace!r} has only special tokens.")

    def maskable(self, token_ids: torch.Tensor) -> torch.Tensor:
        return ~self.is_special.to(token_ids.device)[token_ids]

    def select(self, token_ids: torch.Tensor, num_sets: int = 1, generator: Draws = None) -> torch.Tensor:
        """
        Returns, for each position, the index of the selection it belongs to, or `NOT_SELECTED` (-1).
        Shape: (batch_size, num_tokens), like `token_ids`. `generator`: a `torch.Generator`, `KeyedDraws` or
        `PositionDraws`.
        """
        if num_sets * self.probability > 1.0:
            raise ConfigurationError(
                f"{num_sets} disjoint selections of {self.probability:.0%} each exceed 100% of the tokens "
                f"(model.num_mask_sets x model.masking.probability = {num_sets * self.probability:.0%}): "
                f"lower model.num_mask_sets (sizes.num_mask_sets in the config) to at most {int(1.0 / self.probability)}, "
                f"or the masking probability."
            )
        uniform = _rand(token_ids.shape, generator).to(token_ids.device)
        set_index = torch.div(uniform, self.probability, rounding_mode="floor").long()
        unselected = (set_index >= num_sets) | ~self.maskable(token_ids)
        return set_index.masked_fill(unselected, NOT_SELECTED)

    def corrupt(
        self,
        token_ids: torch.Tensor,
        selected: torch.Tensor,
        generator: Draws = None,
    ) -> torch.Tensor:
        """Applies the 80/10/10 replacement at the `selected` positions; returns new ids (same shape)."""
        uniform = _rand(token_ids.shape, generator).to(token_ids.device)
        to_mask = selected & (uniform < self.mask_fraction)
        to_randomize = (
            selected & (uniform >= self.mask_fraction) & (uniform < self.mask_fraction + self.random_fraction)
        )
        draws = _randint(len(self.replacement_ids), token_ids.shape, generator)
        random_ids = self.replacement_ids[draws].to(token_ids.device)
        corrupted = token_ids.masked_fill(to_mask, self.mask_id)
        return torch.where(to_randomize, random_ids, corrupted)
