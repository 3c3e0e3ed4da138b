"""
The data loader for stateful (bidirectional) truncated back-propagation through time, paper section 3.2.
"""
import logging
import os
import tempfile
from typing import Iterator, Optional, Tuple, Union

import numpy as np
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader, Instance, TensorDict, Vocabulary
from allennlp.data.data_loaders.data_loader import DataLoader
from allennlp.data.data_loaders.multiprocess_data_loader import DatasetReaderInput
from allennlp.nn.util import move_to_device

from maelmo_plugin.data.token_store import TokenStore, is_store

logger = logging.getLogger(__name__)

@DataLoader.register("maelmo_btbptt")
class BtbpttDataLoader(DataLoader):
    """
    Lays the (document-shuffled) word-piece stream of an epoch out as `batch_size` contiguous rows, cuts
    every row into windows of the reader's `sequence_length`, and yields batch b = one window of every
    row, so that a stateful model can carry each row's LSTM states from one batch to the next.

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

    Every batch carries `reset_states` (True for each row at its first window, i.e. the first batch of
    an epoch), which tells the model to start those rows from zero states, and `window_keys`, each row's
    place in the epoch's global layout, (epoch, row, window), from which the model draws its masks: the
    masks of a window depend on where it is in the stream, not on which worker reads it or in which batch.
    Rows all have the same length, a whole number of windows: the few tokens beyond `rows x windows x
    sequence_length` (fewer than one batch) are dropped from that epoch, counted and logged; the next
    epoch's shuffle drops others.

    `data_path` is a token store written by `allennlp maelmo-prepare` (see `maelmo_plugin.data.token_store`),
    which every run and worker opens at once; or text files, which are tokenized on first use into a store in
    a temporary directory, once per process. Every epoch then lays out the stored documents in the reader's
    `document_order(epoch)`. The order depends only on the seed and the epoch number, so a run
    resumed from a mid-epoch checkpoint sees exactly the batches of an uninterrupted one.

    Under distributed training every worker reads the same stream (same seed) and takes its own
    `batch_size` rows of the `world_size x batch_size` rows, so workers see disjoint tokens and the same
    number of batches, as DDP requires. Rows are numbered globally, and which rows run backwards follows
    the global number, so W workers of `batch_size` B lay out, visit and mask the stream exactly as one
    worker of W x B does.

    With `mask_accumulation_passes: k > 1` each batch is yielded k times, with `mask_pass` 0 ... k-1, for
    the model's sequential mask accumulation; set the trainer's `num_gradient_accumulation_steps: k` too.

    Registered as a `DataLoader` with name "maelmo_btbptt".

    # Parameters

    reader : `DatasetReader`
        The "maelmo_mlm_corpus" reader (it gives the token stream and `sequence_length`).
    data_path : `DatasetReaderInput`
        The corpus files, as for the reader.
    batch_size : `int`
        Rows per worker.
    bidirectional : `bool`, optional (default = `True`)
        Visit the odd rows' windows in reverse order (BTBPTT). `False` gives plain TBPTT.
    mask_accumulation_passes : `int`, optional (default = `1`)
        Yield every batch this many times, for sequential mask accumulation.
    cuda_device : `Union[int, str, torch.device]`, optional (default = `None`)
    quiet : `bool`, optional (default = `False`)
        Hide the progress bar shown while the stream is read.
    """

    def __init__(
        self,
        reader: DatasetReader,
        data_path: DatasetReaderInput,
        batch_size: int,
        bidirectional: bool = True,
        mask_accumulation_passes: int = 1,
        cuda_device: Optional[Union[int, str, torch.device]] = None,
        quiet: bool = False,
    ) -> None:
        if not all(hasattr(reader, name) for name in ("paragraphs_by_document", "document_order", "sequence_length")):
            raise ConfigurationError(
                f"maelmo_btbptt needs the maelmo_mlm_corpus dataset reader, got {type(reader).__name__}."
            )
        if batch_size < 1 or mask_accumulation_passes < 1:
            raise ConfigurationError(
                f"batch_size ({batch_size}) and mask_accumulation_passes ({mask_accumulation_passes}) must be >= 1"
            )
        self.reader = reader
        self.data_path = data_path
        self.batch_size = batch_size
        self.bidirectional = bidirectional
        self.mask_accumulation_passes = mask_accumulation_passes
        self.quiet = quiet
        self._target_device: Optional[torch.device] = None
        if cuda_device is not None:
            self.set_target_device(cuda_device)
        self._scratch: Optional[tempfile.TemporaryDirectory] = None
        self._cache: Optional[TokenStore] = None
        self._epochs_started = 0

    def __len__(self) -> int:
        # Every epoch holds the same documents, so the same number of windows per row.
        return self._windows_per_row(self._documents().num_tokens) * self.mask_accumulation_passes

    def __iter__(self) -> Iterator[TensorDict]:
        epoch = self._epochs_started
        self._epochs_started += 1
        cache = self._documents()
        stream_path = os.path.join(self._scratch.name, f"epoch_{epoch}.bin")  # type: ignore[union-attr]
        stream = cache.write_stream(self.reader.document_order(cache.num_documents, epoch), stream_path)
        try:
            rows, first_row = self._my_rows(stream)
            windows_per_row = rows.shape[1]
            global_rows = np.arange(first_row, first_row + len(rows))
            for batch_index in range(windows_per_row):
                window_ids = self.window_order(batch_index, windows_per_row, global_rows)
                # Shape: (batch_size, sequence_length)
                token_ids = torch.from_numpy(rows[np.arange(len(rows)), window_ids].astype(np.int64))
                reset = torch.full((len(rows),), batch_index == 0, dtype=torch.bool)
                # Shape: (batch_size, 3): (epoch, global row, window) of each row
                epochs = np.full(len(rows), epoch)
                keys = torch.from_numpy(np.stack([epochs, global_rows, window_ids], axis=1))
                for mask_pass in range(self.mask_accumulation_passes):
                    yield self._to_device(self._tensor_dict(token_ids, reset, keys, mask_pass))
        finally:
            os.remove(stream_path)

    def window_order(self, batch_index: int, windows_per_row: int, global_rows: np.ndarray) -> np.ndarray:
        """The window each row visits at `batch_index`: forward on even rows, reverse on odd ones."""
        order = np.full(len(global_rows), batch_index)
        if self.bidirectional:
            order[global_rows % 2 == 1] = windows_per_row - 1 - batch_index
        return order

    def _tensor_dict(
        self, token_ids: torch.Tensor, reset: torch.Tensor, keys: torch.Tensor, mask_pass: int
    ) -> TensorDict:
        batch: TensorDict = {
            "tokens": {"tokens": {"tokens": token_ids}},
            "reset_states": reset,
            "window_keys": keys,
        }
        if self.mask_accumulation_passes > 1:
            batch["mask_pass"] = mask_pass
        return batch

    def _to_device(self, batch: TensorDict) -> TensorDict:
        return move_to_device(batch, self._target_device) if self._target_device is not None else batch

    def _documents(self) -> TokenStore:
        """The tokenized corpus: the prepared store, or one built on first use (by every worker, in full)."""
        if self._cache is None:
            # The epochs' streams are written here; a text corpus is also tokenized here.
            self._scratch = tempfile.TemporaryDirectory(prefix="maelmo_btbptt_")
            if is_store(self.data_path):
                store = TokenStore(self.data_path)
                store.check_matches(self.reader, str(self.data_path))
                store.check_corpus()
            else:
                directory = os.path.join(self._scratch.name, "store")
                store = TokenStore.prepare(
                    self.reader, self.data_path, directory, quiet=self.quiet, describe_corpus=False
                )
            self._cache = store
        return self._cache

    def _windows_per_row(self, num_tokens: int) -> int:
        _, world_size = _distributed_rank_and_size()
        total_rows = world_size * self.batch_size
        length = self.reader.sequence_length
        windows_per_row = num_tokens // (total_rows * length)
        if windows_per_row == 0:
            raise ConfigurationError(
                f"The corpus {self.data_path} has {num_tokens} word-pieces: too few for {total_rows} rows "
                f"({world_size} worker(s) x batch_size {self.batch_size}) of at least one window of "
                f"{length}. Lower batch_size or sequence_length, or give a larger corpus."
            )
        return windows_per_row

    def _my_rows(self, stream: np.ndarray) -> Tuple[np.ndarray, int]:
        """This worker's rows, (batch_size, windows_per_row, sequence_length), and its first row's number."""
        rank, world_size = _distributed_rank_and_size()
        total_rows = world_size * self.batch_size
        length = self.reader.sequence_length
        windows_per_row = self._windows_per_row(len(stream))
        used = total_rows * windows_per_row * length
        if used < len(stream) and rank == 0:
            logger.info(
                "BTBPTT: %d rows x %d windows of %d word-pieces; the last %d of %d word-pieces of this "
                "epoch's stream do not fill a batch and are left out of this epoch.",
                total_rows, windows_per_row, length, len(stream) - used, len(stream),
            )
        rows = stream[:used].reshape(total_rows, windows_per_row, length)
        return rows[rank * self.batch_size : (rank + 1) * self.batch_size], rank * self.batch_size

    def iter_instances(self) -> Iterator[Instance]:
        yield from self.reader.read(self.data_path)

    def index_with(self, vocab: Vocabulary) -> None:
        # Word-piece ids come from the tokenizer itself: there is nothing to index.
        pass

    def set_target_device(self, device: Union[int, str, torch.device]) -> None:
        if isinstance(device, int):
            device = torch.device("cpu") if device < 0 else torch.device("cuda", device)
        self._target_device = torch.device(device)


def _distributed_rank_and_size() -> Tuple[int, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1

