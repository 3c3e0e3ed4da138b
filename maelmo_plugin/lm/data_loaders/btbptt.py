"""
The pre-training data loader: it alone decides the epoch's document order, the windows and which worker
reads which of them, for training (stateful, bidirectional truncated back-propagation through time, paper
section 3.2) and for validation (stateless windows).
"""

import logging
from collections.abc import Iterator
from typing import Optional, Union, cast

import numpy as np
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader, Instance, TensorDict, Vocabulary
from allennlp.data.data_loaders.data_loader import DataLoader
from allennlp.data.data_loaders.multiprocess_data_loader import DatasetReaderInput
from allennlp.nn.util import move_to_device

from maelmo_plugin.lm.batch import LmBatch
from maelmo_plugin.lm.dataset_readers.store_cache import open_corpus
from maelmo_plugin.lm.dataset_readers.token_store import EpochStream, TokenStore

logger = logging.getLogger(__name__)


@DataLoader.register("maelmo_btbptt")
class BtbpttDataLoader(DataLoader):
    """
    Lays the (document-shuffled) word-piece stream of an epoch out as `batch_size` contiguous rows, cuts
    every row into windows of `sequence_length`, and yields batch b = one window of every row, so that a
    stateful model can carry each row's LSTM states from one batch to the next.

    Bidirectional TBPTT (BTBPTT, Senay & Salin 2020, section 3.2): the odd rows visit their windows in
    reverse order. A forward LSTM's state carried from the previous batch is the right one only when
    that batch held the window to the left; a backward LSTM's only when it held the window to the right.
    Visiting half of the rows right-to-left makes the carried backward state the right one for them, so
    each direction sees correct context across windows on half of the rows, instead of the backward
    direction never doing so:

        stream:  t0 t1 t2 ... (one epoch, documents shuffled)     batch_size = 4 rows, 3 windows per row
                 ┌──────────┬──────────┬──────────┐
        row 0    │ w0 ──►   │ w1 ──►   │ w2       │   batches visit w0, w1, w2   (forward order)
        row 1    │ w0       │ w1   ◄── │ w2   ◄── │   batches visit w2, w1, w0   (reverse order)
        row 2    │ w0 ──►   │ w1 ──►   │ w2       │
        row 3    │ w0       │ w1   ◄── │ w2   ◄── │
                 └──────────┴──────────┴──────────┘
        batch 0 = [row0.w0, row1.w2, row2.w0, row3.w2],  batch 1 = [row0.w1, row1.w1, ...],  ...

    Tokens inside a window always stay in reading order; only the order of the windows changes. With
    `bidirectional: false` every row is visited left to right (plain TBPTT, the ablation of Table 6).
    Rows all have the same length, a whole number of windows: the few tokens beyond `rows x windows x
    sequence_length` (fewer than one batch) are dropped from that epoch, counted and logged; the next
    epoch's shuffle drops others.

    With `stateful: false` (validation, evaluation) the stream is cut into consecutive windows, every
    one kept (the last may be shorter, and is padded), and batch b holds windows b x batch_size onwards;
    every window starts from zero states, so the figure does not depend on the batch size.

    Every batch carries `reset_states` (which rows start from zero states) and `window_keys`, each row's
    place in the epoch's global layout: (epoch, row, window) when stateful, (epoch, window, -1) when not.
    The model draws its masks from these keys, so the masks of a window depend on where it is in the
    stream, not on which worker reads it or in which batch. With `mask_by_position: true` every batch also
    carries `token_positions`, each word-piece's index in the epoch's stream (-1 at padding), from which the
    model draws each word-piece's mask alone: the same word-pieces are then masked whatever the windows'
    length, so models trained on windows of different lengths, each scored on its own windows, predict the
    same tokens (Table 5's comparison).

    **Document order.** With `shuffle`, epoch e lays out the documents in the order of
    `numpy.random.default_rng([seed, e]).permutation(num_documents)` (document-level shuffling, paper 3.3),
    whole documents kept contiguous. A store of more than `max_shuffle_blocks` documents is shuffled by
    blocks instead: it is cut into at most that many blocks of `ceil(num_documents / max_shuffle_blocks)`
    consecutive documents, which keep the corpus's order inside a block, and the permutation moves the
    blocks. Each row of a batch reads about `1 / (world_size x batch_size)` of the epoch's stream
    contiguously, far more than a block of a large corpus, so a batch still mixes distant parts of the corpus
    and every epoch lays them out anew; what blocks give up is only which document follows which inside a
    block. In exchange an epoch's start costs every worker the same memory and about the same time at 100 GB
    as at 100 MB: two int64 arrays of one entry per block (the order and where each block ends in the
    stream), where one entry per document would cost each worker gigabytes and a minute per epoch (MosaicML's
    streaming datasets shuffle by blocks, `shuffle_block_size`, for the same reason). The order depends
    on the seed, the epoch number and the store's size alone, not on any global generator, so every worker
    draws the same one and a run resumed from a mid-epoch checkpoint sees exactly the batches of an
    uninterrupted one. Windows are read straight from the memory-mapped store through the order's offsets,
    and nothing of the corpus's word-pieces is read or written at an epoch's start.

    **Workers.** Under distributed training every worker computes the same layout and takes its own
    `batch_size` rows of the `world_size x batch_size` rows (stateless: its own `batch_size` windows of each
    group of `world_size x batch_size`), so workers see disjoint tokens. Rows are numbered globally, and
    which rows run backwards follows the global number, so W workers of `batch_size` B lay out, visit and
    mask the stream exactly as one worker of W x B does.

    **Corpus.** `data_path` is a token store written by `allennlp maelmo-prepare`, which every run and worker
    opens at once; or text files, which are tokenized on first use into a cached store (see
    `maelmo_plugin.lm.dataset_readers.store_cache`) by one process while the others wait.

    With `mask_accumulation_passes: k > 1` each batch is yielded k times, with `mask_pass` 0 ... k-1, for
    the model's sequential mask accumulation; set the trainer's `num_gradient_accumulation_steps: k` too.

    Each batch is an `LmBatch` (`maelmo_plugin/lm/batch.py`, where its fields are described).

    Registered as a `DataLoader` with name "maelmo_btbptt".

    # Parameters

    reader : `DatasetReader`
        The "maelmo_mlm_corpus" reader: it turns text into word-piece ids, and says which vocabulary a store
        must have been prepared with.
    data_path : `DatasetReaderInput`
        A token store directory, or the corpus files as for the reader.
    batch_size : `int`
        Rows (stateless: windows) per worker.
    sequence_length : `int`, optional (default = `128`)
        Word-pieces per window (the length of back-propagation through time).
    shuffle : `bool`, optional (default = `True`)
        Shuffle the documents every epoch. Validation sets it to `false`, so every pass reads the same windows.
    seed : `int`, optional (default = `13370`)
        Epoch e shuffles with `numpy.random.default_rng([seed, e])`; at least 0.
    max_shuffle_blocks : `int`, optional (default = `65536`)
        The most units an epoch's order moves: a store of more documents is shuffled by blocks of consecutive
        documents (above). It bounds an epoch's start (1 MB and about a millisecond at the default); a store of
        up to this many documents is shuffled document by document.
    stateful : `bool`, optional (default = `True`)
        Contiguous rows whose states carry over (training); `false` gives independent windows (validation).
    bidirectional : `bool`, optional (default = `True`)
        Visit the odd rows' windows in reverse order (BTBPTT). `False` gives plain TBPTT.
    mask_accumulation_passes : `int`, optional (default = `1`)
        Yield every batch this many times, for sequential mask accumulation.
    cache_directory : `str`, optional (default = `None`)
        Where a text corpus is tokenized on first use; `None` is `maelmo_token_stores/` in AllenNLP's cache
        root (`$ALLENNLP_CACHE_ROOT`, by default `~/.allennlp`).
    rebuild_store : `bool`, optional (default = `False`)
        When `data_path` is a store whose corpus files changed or whose vocabulary is not the reader's,
        prepare it again (one process; the others wait) instead of stopping.
    cuda_device : `Union[int, str, torch.device]`, optional (default = `None`)
    quiet : `bool`, optional (default = `False`)
        Hide the progress bar of a first-use tokenization.
    mask_by_position : `bool`, optional (default = `False`)
        Give the model `token_positions`, so that each word-piece's mask depends on its place in the stream
        only (above). Meant for evaluation: in training, an unshuffled stream would then get the same masks
        every epoch.
    """

    def __init__(
        self,
        reader: DatasetReader,
        data_path: DatasetReaderInput,
        batch_size: int,
        sequence_length: int = 128,
        shuffle: bool = True,
        seed: int = 13370,
        max_shuffle_blocks: int = 65536,
        stateful: bool = True,
        bidirectional: bool = True,
        mask_accumulation_passes: int = 1,
        cache_directory: Optional[str] = None,
        rebuild_store: bool = False,
        cuda_device: Optional[Union[int, str, torch.device]] = None,
        quiet: bool = False,
        mask_by_position: bool = False,
    ) -> None:
        # What preparing a token store calls on the reader (a test stands in a reader of numbers for it).
        if not all(hasattr(reader, name) for name in ("document_blocks", "block_ids", "tokenizer")):
            raise ConfigurationError(
                f"maelmo_btbptt needs the maelmo_mlm_corpus dataset reader, got {type(reader).__name__}."
            )
        for name, value in [
            ("batch_size", batch_size),
            ("sequence_length", sequence_length),
            ("mask_accumulation_passes", mask_accumulation_passes),
            ("max_shuffle_blocks", max_shuffle_blocks),
        ]:
            if value < 1:
                raise ConfigurationError(
                    f"The maelmo_btbptt data loader's {name} must be at least 1, got {value}."
                )
        if seed < 0:
            raise ConfigurationError(f"The maelmo_btbptt data loader's seed must be at least 0, got {seed}.")
        self.reader = reader
        self.data_path = data_path
        self.batch_size = batch_size
        self.sequence_length = sequence_length
        self.shuffle = shuffle
        self.seed = seed
        self.max_shuffle_blocks = max_shuffle_blocks
        self.stateful = stateful
        self.bidirectional = bidirectional
        self.mask_accumulation_passes = mask_accumulation_passes
        self.cache_directory = cache_directory
        self.rebuild_store = rebuild_store
        self.quiet = quiet
        self.mask_by_position = mask_by_position
        self._target_device: Optional[torch.device] = None
        if cuda_device is not None:
            self.set_target_device(cuda_device)
        self._store: Optional[TokenStore] = None
        self._epochs_started = 0

    def __len__(self) -> int:
        num_tokens = self._documents().num_tokens
        if self.stateful:
            # Every epoch holds the same documents, so the same number of windows per row.
            batches = self._windows_per_row(num_tokens)
        else:
            batches = len(self._my_window_groups(-(-num_tokens // self.sequence_length)))
        return batches * self.mask_accumulation_passes

    def __iter__(self) -> Iterator[TensorDict]:
        epoch = self._epochs_started
        self._epochs_started += 1
        store = self._documents()
        stream = store.stream(*self.epoch_blocks(store.num_documents, epoch))
        batches = (
            self._stateful_batches(stream, epoch) if self.stateful else self._stateless_batches(stream, epoch)
        )
        for token_ids, reset, keys, positions in batches:
            for mask_pass in range(self.mask_accumulation_passes):
                batch = self._tensor_dict(token_ids, reset, keys, positions, mask_pass)
                # An LmBatch (maelmo_plugin/lm/batch.py), handed on as AllenNLP's loaders type their batches:
                # TensorDict's annotation knows neither the text field's two nested dicts nor the int mask_pass.
                yield self._to_device(cast(TensorDict, batch))

    def epoch_blocks(self, num_documents: int, epoch: int) -> tuple[np.ndarray, int]:
        """
        Epoch `epoch`'s (from 0) order of blocks, an int64 array, and the documents per block: block b is the
        documents from `b x block_size` up to the next block's. The order is a permutation drawn from
        `(seed, epoch)` alone, or in order without `shuffle`; blocks are single documents while there are at
        most `max_shuffle_blocks` of them.
        """
        block_size = max(1, -(-num_documents // self.max_shuffle_blocks))
        num_blocks = -(-num_documents // block_size)
        if not self.shuffle:
            return np.arange(num_blocks, dtype=np.int64), block_size
        order = np.random.default_rng([self.seed, epoch]).permutation(num_blocks).astype(np.int64, copy=False)
        return order, block_size

    def document_order(self, num_documents: int, epoch: int) -> np.ndarray:
        """
        The documents of epoch `epoch` one by one, an int64 array, for a reader of the layout: the loader
        reads through the blocks and never makes this array.
        """
        blocks, block_size = self.epoch_blocks(num_documents, epoch)
        documents = (blocks[:, None] * block_size + np.arange(block_size)).ravel()
        return documents[documents < num_documents]

    def window_order(self, batch_index: int, windows_per_row: int, global_rows: np.ndarray) -> np.ndarray:
        """The window each row visits at `batch_index`: forward on even rows, reverse on odd ones."""
        order = np.full(len(global_rows), batch_index)
        if self.bidirectional:
            order[global_rows % 2 == 1] = windows_per_row - 1 - batch_index
        return order

    def _stateful_batches(
        self, stream: EpochStream, epoch: int
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]:
        rank, world_size = _distributed_rank_and_size()
        length = self.sequence_length
        windows_per_row = self._windows_per_row(stream.length)
        total_rows = world_size * self.batch_size
        used = total_rows * windows_per_row * length
        if used < stream.length and rank == 0:
            logger.info(
                "BTBPTT: %d rows x %d windows of %d word-pieces; the last %d of %d word-pieces of this "
                "epoch's stream do not fill a batch and are left out of this epoch.",
                total_rows,
                windows_per_row,
                length,
                stream.length - used,
                stream.length,
            )
        global_rows = np.arange(rank * self.batch_size, (rank + 1) * self.batch_size)
        row_starts = global_rows * windows_per_row * length
        for batch_index in range(windows_per_row):
            window_ids = self.window_order(batch_index, windows_per_row, global_rows)
            # Shape: (batch_size, sequence_length)
            token_ids = np.stack(
                [stream.read(start, start + length) for start in row_starts + window_ids * length]
            )
            reset = torch.full((len(global_rows),), batch_index == 0, dtype=torch.bool)
            # Shape: (batch_size, 3): (epoch, global row, window) of each row
            keys = np.stack([np.full(len(global_rows), epoch), global_rows, window_ids], axis=1)
            # Shape: (batch_size, sequence_length): each word-piece's index in the stream
            positions = (row_starts + window_ids * length)[:, None] + np.arange(length)
            yield (
                torch.from_numpy(token_ids.astype(np.int64)),
                reset,
                torch.from_numpy(keys),
                torch.from_numpy(positions),
            )

    def _stateless_batches(
        self, stream: EpochStream, epoch: int
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]:
        length = self.sequence_length
        # Unshuffled passes are all alike, and so are their masks: every validation pass gives the same figure.
        key_epoch = epoch if self.shuffle else 0
        for windows in self._my_window_groups(-(-stream.length // length)):
            # A worker with no window left in the last group reads one row of [PAD], window -1: nothing in it
            # is masked or predicted, so it adds nothing to the loss or the perplexity.
            windows = windows if len(windows) else np.array([-1])
            # Shape: (windows, sequence_length), the last window of the stream padded with 0 ([PAD]).
            token_ids = np.zeros((len(windows), length), dtype=np.int64)
            for row, window in enumerate(windows[windows >= 0]):
                ids = stream.read(window * length, min((window + 1) * length, stream.length))
                token_ids[row, : len(ids)] = ids
            reset = torch.ones(len(windows), dtype=torch.bool)
            keys = np.stack([np.full(len(windows), key_epoch), windows, np.full(len(windows), -1)], axis=1)
            # Shape: (windows, sequence_length): each word-piece's index in the stream, -1 at padding
            positions = windows[:, None] * length + np.arange(length)
            positions[(windows[:, None] < 0) | (positions >= stream.length)] = -1
            yield torch.from_numpy(token_ids), reset, torch.from_numpy(keys), torch.from_numpy(positions)

    def _my_window_groups(self, num_windows: int) -> list[np.ndarray]:
        """
        This worker's windows for each of its batches: its `batch_size` of every `world_size x batch_size`.
        Every worker gets as many batches as there are groups, the last possibly empty, because AllenNLP ends
        every worker's pass as soon as one worker runs out, which would skip the others' last windows.
        """
        rank, world_size = _distributed_rank_and_size()
        group = world_size * self.batch_size
        starts = (start + rank * self.batch_size for start in range(0, num_windows, group))
        return [np.arange(start, min(start + self.batch_size, num_windows)) for start in starts]

    def _tensor_dict(
        self,
        token_ids: torch.Tensor,
        reset: torch.Tensor,
        keys: torch.Tensor,
        positions: torch.Tensor,
        mask_pass: int,
    ) -> LmBatch:
        batch = LmBatch(tokens={"tokens": {"tokens": token_ids}}, reset_states=reset, window_keys=keys)
        if self.mask_by_position:
            batch["token_positions"] = positions
        if self.mask_accumulation_passes > 1:
            batch["mask_pass"] = mask_pass
        return batch

    def _to_device(self, batch: TensorDict) -> TensorDict:
        return move_to_device(batch, self._target_device) if self._target_device is not None else batch

    def _documents(self) -> TokenStore:
        if self._store is None:
            self._store = open_corpus(
                self.reader, self.data_path, self.cache_directory, self.rebuild_store, self.quiet
            )
        return self._store

    def _windows_per_row(self, num_tokens: int) -> int:
        _, world_size = _distributed_rank_and_size()
        total_rows = world_size * self.batch_size
        windows_per_row = num_tokens // (total_rows * self.sequence_length)
        if windows_per_row == 0:
            raise ConfigurationError(
                f"The corpus {self.data_path} has {num_tokens} word-pieces: too few for {total_rows} rows "
                f"({world_size} worker(s) x batch_size {self.batch_size}) of at least one window of "
                f"{self.sequence_length}. Lower batch_size or sequence_length, or give a larger corpus."
            )
        return windows_per_row

    def iter_instances(self) -> Iterator[Instance]:
        yield from self.reader.read(self.data_path)

    def index_with(self, vocab: Vocabulary) -> None:
        # Word-piece ids come from the tokenizer itself: there is nothing to index.
        pass

    def set_target_device(self, device: Union[int, str, torch.device]) -> None:
        if isinstance(device, int):
            device = torch.device("cpu") if device < 0 else torch.device("cuda", device)
        self._target_device = torch.device(device)


def _distributed_rank_and_size() -> tuple[int, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1
