import copy
import logging
import os
import tempfile

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from allennlp.common import Lazy, Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader
from allennlp.data.data_loaders import DataLoader

from maelmo_plugin.data.data_loaders import btbptt
from maelmo_plugin.data.data_loaders.btbptt import BtbpttDataLoader
from maelmo_plugin.data.wordpiece import WordpieceTokenizer
from tests import FIXTURES_ROOT


class NumberedStreamReader:
    """Stands in for maelmo_mlm_corpus: the stream is 0, 1, 2, ..., in paragraphs of 7."""

    # What the loader's token store records of a reader (its ids' meaning); the ids here are just numbers.
    tokenizer = WordpieceTokenizer(str(FIXTURES_ROOT / "lm" / "vocab.txt"))
    document_start_pattern = None

    def __init__(self, num_tokens: int, sequence_length: int) -> None:
        self.num_tokens = num_tokens
        self.sequence_length = sequence_length

    def paragraphs_by_document(self, data_path):
        for start in range(0, self.num_tokens, 7):  # a document of two paragraphs every 7 tokens
            yield start // 7, list(range(start, min(start + 4, self.num_tokens)))
            if start + 4 < self.num_tokens:
                yield start // 7, list(range(start + 4, min(start + 7, self.num_tokens)))

    def document_order(self, num_documents, epoch):
        return list(range(num_documents))


def batches(loader):
    return [
        (batch["tokens"]["tokens"]["tokens"].numpy(), batch["reset_states"].numpy(), batch.get("mask_pass"))
        for batch in loader
    ]


def test_each_row_receives_exactly_its_stream_in_its_directions_order(caplog):
    # 123 tokens, 4 rows, windows of 5: 6 windows per row (row r holds 30r ... 30r+29), 3 tokens left out.
    loader = BtbpttDataLoader(NumberedStreamReader(123, 5), "numbers", batch_size=4, quiet=True)
    with caplog.at_level(logging.INFO):
        seen = batches(loader)
    assert len(seen) == 6 == len(loader)
    for row in range(4):
        visits = [tokens[row] for tokens, _, _ in seen]
        expected_windows = [np.arange(30 * row + 5 * w, 30 * row + 5 * w + 5) for w in range(6)]
        if row % 2:  # odd rows go right to left, window by window; tokens stay in reading order
            expected_windows = expected_windows[::-1]
        for visit, expected in zip(visits, expected_windows):
            np.testing.assert_array_equal(visit, expected)
    assert [reset.tolist() for _, reset, _ in seen] == [[True] * 4] + [[False] * 4] * 5
    assert "the last 3 of 123 word-pieces" in caplog.text


def test_plain_tbptt_visits_every_row_left_to_right():
    loader = BtbpttDataLoader(NumberedStreamReader(40, 5), "numbers", batch_size=2, bidirectional=False, quiet=True)
    seen = batches(loader)
    np.testing.assert_array_equal(np.stack([tokens for tokens, _, _ in seen], 1).reshape(2, -1), np.arange(40).reshape(2, 20))


def test_mask_accumulation_passes_repeat_each_batch_with_its_pass_index():
    loader = BtbpttDataLoader(NumberedStreamReader(40, 5), "x", batch_size=2, mask_accumulation_passes=3, quiet=True)
    seen = batches(loader)
    assert len(seen) == 12 == len(loader)
    assert [mask_pass for _, _, mask_pass in seen] == [0, 1, 2] * 4
    for group in range(4):
        first = seen[3 * group][0]
        assert all(np.array_equal(first, tokens) for tokens, _, _ in seen[3 * group : 3 * group + 3])


def test_too_small_a_corpus_is_a_clear_error():
    loader = BtbpttDataLoader(NumberedStreamReader(9, 5), "tiny.txt", batch_size=2, quiet=True)
    with pytest.raises(ConfigurationError, match="tiny.txt has 9 word-pieces: too few for 2 rows"):
        list(loader)


def test_builds_from_a_config_with_the_real_reader_and_yields_the_reader_stream():
    corpus = str(FIXTURES_ROOT / "lm" / "corpus.txt")
    vocab = str(FIXTURES_ROOT / "lm" / "vocab.txt")
    reader_params = {"type": "maelmo_mlm_corpus", "tokenizer": {"type": "maelmo_wordpiece", "vocab": vocab},
                     "sequence_length": 6, "shuffle_documents": False}
    reader = DatasetReader.from_params(Params(copy.deepcopy(reader_params)))
    twin = DatasetReader.from_params(Params(copy.deepcopy(reader_params)))
    stream = [token.text_id for instance in twin.read(corpus) for token in instance["tokens"].tokens]
    # As allennlp train builds it: a Lazy data loader given the reader and the data path.
    loader_params = Params({"type": "maelmo_btbptt", "batch_size": 2, "bidirectional": False})
    loader = Lazy(DataLoader, params=loader_params).construct(reader=reader, data_path=corpus)
    seen = batches(loader)
    rows = np.stack([tokens for tokens, _, _ in seen], 1).reshape(2, -1)
    per_row = rows.shape[1]
    assert rows.tolist() == [stream[:per_row], stream[per_row : 2 * per_row]]


def real_loader(**reader_options):
    vocab = str(FIXTURES_ROOT / "lm" / "vocab.txt")
    reader = DatasetReader.from_params(Params({
        "type": "maelmo_mlm_corpus", "tokenizer": {"type": "maelmo_wordpiece", "vocab": vocab},
        "sequence_length": 4, **reader_options,
    }))
    return BtbpttDataLoader(reader, str(FIXTURES_ROOT / "lm" / "corpus.txt"), batch_size=2, quiet=True)


def epoch_tokens(loader):
    return np.concatenate([tokens for tokens, _, _ in batches(loader)])


def test_each_epoch_lays_out_the_cached_documents_in_the_readers_order_for_that_epoch(monkeypatch):
    loader = real_loader(seed=3)
    documents = {}
    for document, ids in loader.reader.paragraphs_by_document(loader.data_path):
        documents.setdefault(document, []).extend(ids)
    documents = [documents[d] for d in sorted(documents)]
    tokenizations = []
    original = type(loader.reader).paragraphs_by_document
    monkeypatch.setattr(type(loader.reader), "paragraphs_by_document", lambda self, path: tokenizations.append(path) or original(self, path))
    epochs = [batches(loader) for _ in range(3)]
    assert len(tokenizations) == 1  # tokenized once, then every epoch comes from the cache
    orders = [loader.reader.document_order(len(documents), epoch) for epoch in range(3)]
    assert orders[0] != orders[1]  # documents are reshuffled every epoch
    for order, seen in zip(orders, epochs):
        stream = np.concatenate([documents[d] for d in order])
        first_row = np.concatenate([tokens[0] for tokens, _, _ in seen])
        np.testing.assert_array_equal(first_row, stream[: len(first_row)])


def test_an_epochs_batches_do_not_depend_on_other_reads_of_the_same_reader():
    # A validation loader reading with the same reader between epochs must not move the training order,
    # or a run resumed from a checkpoint (which replays no validation) would see other batches.
    plain, interleaved = real_loader(seed=5), real_loader(seed=5)
    for epoch in range(3):
        list(interleaved.reader.read(interleaved.data_path))  # what validation does
        np.testing.assert_array_equal(epoch_tokens(plain), epoch_tokens(interleaved))


def test_length_is_known_before_the_first_epoch():
    loader = real_loader()
    assert len(loader) == len(batches(loader)) > 0


def _distributed_worker(rank, world_size, init_file, out_dir):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    try:
        loader = BtbpttDataLoader(NumberedStreamReader(1000, 8), "numbers", batch_size=3, quiet=True)
        tokens = np.concatenate([batch["tokens"]["tokens"]["tokens"].numpy().ravel() for batch in loader])
        np.save(os.path.join(out_dir, f"rank{rank}.npy"), tokens)
    finally:
        dist.destroy_process_group()


def test_two_gloo_workers_see_disjoint_tokens_and_lose_none_but_the_tail():
    with tempfile.TemporaryDirectory() as out_dir:
        init_file = os.path.join(out_dir, "init")
        mp.spawn(_distributed_worker, args=(2, init_file, out_dir), nprocs=2, join=True)
        seen = [np.load(os.path.join(out_dir, f"rank{rank}.npy")) for rank in range(2)]
    everything = np.concatenate(seen)
    # 6 rows of 1000 // (6 * 8) = 20 windows: 960 tokens used, the 40-token tail (< one batch) left out.
    assert len(seen[0]) == len(seen[1]) == 480
    assert len(np.unique(everything)) == len(everything)  # no token twice
    np.testing.assert_array_equal(np.sort(everything), np.arange(960))  # none lost
    assert 1000 - 960 < 6 * 8


def test_outside_distributed_training_the_worker_is_rank_zero_of_one():
    assert btbptt._distributed_rank_and_size() == (0, 1)
    assert torch.distributed.is_available()


def test_w_workers_of_b_rows_see_what_one_worker_of_w_times_b_rows_sees(monkeypatch):
    """Same tokens, directions and window keys per global row; B = 3 is odd, so parity must be global."""
    def run(rank, world_size, batch_size):
        monkeypatch.setattr(btbptt, "_distributed_rank_and_size", lambda: (rank, world_size))
        loader = BtbpttDataLoader(NumberedStreamReader(1000, 8), "numbers", batch_size=batch_size, quiet=True)
        return [(b["tokens"]["tokens"]["tokens"].numpy(), b["window_keys"].numpy()) for b in loader]

    single = run(0, 1, 6)
    workers = [run(rank, 2, 3) for rank in range(2)]
    assert len(single) == len(workers[0]) == len(workers[1]) == 20
    for batch_index, (tokens, keys) in enumerate(single):
        np.testing.assert_array_equal(np.concatenate([w[batch_index][0] for w in workers]), tokens)
        np.testing.assert_array_equal(np.concatenate([w[batch_index][1] for w in workers]), keys)
        assert keys[:, 0].tolist() == [0] * 6 and keys[:, 1].tolist() == list(range(6))  # epoch 0, rows 0-5
        windows = [batch_index, 19 - batch_index] * 3  # odd global rows run backwards
        assert keys[:, 2].tolist() == windows
        np.testing.assert_array_equal(tokens[:, 0], np.arange(6) * 160 + np.array(windows) * 8)
