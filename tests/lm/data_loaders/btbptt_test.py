import copy
import json
import logging
import os
import random
import tempfile
import tracemalloc
from typing import NamedTuple

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from allennlp.common import Lazy, Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader
from allennlp.data.data_loaders import DataLoader

from maelmo_plugin.common.wordpiece import WordpieceTokenizer
from maelmo_plugin.lm.data_loaders import btbptt
from maelmo_plugin.lm.data_loaders.btbptt import BtbpttDataLoader
from maelmo_plugin.lm.dataset_readers.token_store import TokenStore
from tests import FIXTURES_ROOT


class NumberedStreamReader:
    """
    Stands in for maelmo_mlm_corpus: the stream is 0, 1, 2, ..., a document of two paragraphs (4 and 3 numbers)
    every 7, read in blocks of 10 numbers, so that most blocks start inside a document.
    """

    # What the loader's token store records of a reader (its ids' meaning); the ids here are just numbers.
    tokenizer = WordpieceTokenizer(str(FIXTURES_ROOT / "lm" / "vocab.txt"))
    document_start_pattern = None
    sentence_splitter_setting = None

    def __init__(self, num_tokens: int) -> None:
        self.num_tokens = num_tokens

    def document_blocks(self, data_path):
        return [Block(start, min(start + 10, self.num_tokens)) for start in range(0, self.num_tokens, 10)]

    def block_ids(self, block):
        cuts = sorted(
            {block.start, block.end} | {n for n in range(block.start, block.end) if n % 7 in (0, 4)}
        )
        open_document = (block.start - 1) // 7  # the document open where the block starts
        for start, end in zip(cuts, cuts[1:]):
            yield start // 7 - open_document, list(range(start, end))


class Block(NamedTuple):
    start: int
    end: int


@pytest.fixture
def numbers(tmp_path):
    """A loader over the numbered stream (the text file only names the corpus), tokenized into tmp_path."""
    path = tmp_path / "numbers.txt"
    path.write_text("numbers")

    def loader(num_tokens, sequence_length, batch_size, **options):
        options.setdefault("shuffle", False)
        return BtbpttDataLoader(
            NumberedStreamReader(num_tokens),
            str(path),
            batch_size=batch_size,
            sequence_length=sequence_length,
            cache_directory=str(tmp_path / f"cache{num_tokens}"),
            quiet=True,
            **options,
        )

    return loader


def batches(loader):
    return [
        (batch["tokens"]["tokens"]["tokens"].numpy(), batch["reset_states"].numpy(), batch.get("mask_pass"))
        for batch in loader
    ]


def test_each_row_receives_exactly_its_stream_in_its_directions_order(numbers, caplog):
    # 123 tokens, 4 rows, windows of 5: 6 windows per row (row r holds 30r ... 30r+29), 3 tokens left out.
    loader = numbers(123, 5, batch_size=4)
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


def test_plain_tbptt_visits_every_row_left_to_right(numbers):
    loader = numbers(40, 5, batch_size=2, bidirectional=False)
    seen = batches(loader)
    rows = np.stack([tokens for tokens, _, _ in seen], 1).reshape(2, -1)
    np.testing.assert_array_equal(rows, np.arange(40).reshape(2, 20))


def test_mask_accumulation_passes_repeat_each_batch_with_its_pass_index(numbers):
    loader = numbers(40, 5, batch_size=2, mask_accumulation_passes=3)
    seen = batches(loader)
    assert len(seen) == 12 == len(loader)
    assert [mask_pass for _, _, mask_pass in seen] == [0, 1, 2] * 4
    for group in range(4):
        first = seen[3 * group][0]
        assert all(np.array_equal(first, tokens) for tokens, _, _ in seen[3 * group : 3 * group + 3])


def test_too_small_a_corpus_is_a_clear_error(numbers):
    with pytest.raises(ConfigurationError, match="numbers.txt has 9 word-pieces: too few for 2 rows"):
        list(numbers(9, 5, batch_size=2))
    with pytest.raises(ConfigurationError, match="sequence_length must be at least 1, got 0"):
        numbers(9, 0, batch_size=2)


def test_stateless_windows_cover_the_stream_in_order_each_from_zero_states(numbers, monkeypatch):
    # 23 tokens in windows of 5: 4 full windows and a tail of 3, padded; batches of 2 windows.
    loader = numbers(23, 5, batch_size=2, stateful=False)
    seen = [
        (b["tokens"]["tokens"]["tokens"].numpy(), b["reset_states"].numpy(), b["window_keys"].numpy())
        for b in loader
    ]
    assert len(seen) == 3 == len(loader)
    tokens = np.concatenate([t for t, _, _ in seen])
    np.testing.assert_array_equal(tokens[:4], np.arange(20).reshape(4, 5))
    np.testing.assert_array_equal(tokens[4], [20, 21, 22, 0, 0])
    assert all(reset.all() for _, reset, _ in seen)
    keys = np.concatenate([k for _, _, k in seen])
    assert keys.tolist() == [[0, window, -1] for window in range(5)]
    # Every pass the same windows and keys (so the same masks): validation figures are comparable.
    again = [b["window_keys"].numpy() for b in loader]
    np.testing.assert_array_equal(np.concatenate(again), keys)
    # Two workers of 2 windows share the windows of one worker of 4, with the same keys: windows 0-1 and 4
    # on rank 0, 2-3 on rank 1. Both read 2 batches, since AllenNLP stops every worker's pass when one runs
    # out (rank 0's window 4 would be skipped): rank 1's second batch is one row of [PAD], which has nothing
    # to mask, with the key of no window (-1).
    halves = []
    for rank in range(2):
        monkeypatch.setattr(btbptt, "_distributed_rank_and_size", lambda rank=rank: (rank, 2))
        loader = numbers(23, 5, batch_size=2, stateful=False)
        halves.append([(b["tokens"]["tokens"]["tokens"].numpy(), b["window_keys"].numpy()) for b in loader])
        assert len(loader) == 2
    assert [len(h) for h in halves] == [2, 2]
    filler_tokens, filler_keys = halves[1][1]
    assert filler_tokens.tolist() == [[0] * 5] and filler_keys.tolist() == [[0, -1, -1]]
    merged = sorted(map(tuple, np.concatenate([k for h in halves for _, k in h if k[0, 1] >= 0]).tolist()))
    assert merged == sorted(map(tuple, keys.tolist()))


def test_shuffling_moves_whole_documents_reproducibly_by_seed_and_epoch(numbers):
    def epochs(seed, count=3):
        loader = numbers(700, 7, batch_size=1, shuffle=True, seed=seed, bidirectional=False)
        return [
            np.concatenate([b["tokens"]["tokens"]["tokens"].numpy().ravel() for b in loader])
            for _ in range(count)
        ]

    first = epochs(seed=1)
    for stream in first:
        documents = stream.reshape(-1, 7)  # every document is 7 numbers: each stays whole and in order
        np.testing.assert_array_equal(documents - documents[:, :1], np.tile(np.arange(7), (100, 1)))
        assert sorted(documents[:, 0].tolist()) == list(range(0, 700, 7))
    assert not np.array_equal(first[0], np.arange(700)) and not np.array_equal(first[0], first[1])
    assert all(np.array_equal(a, b) for a, b in zip(epochs(seed=1), first))
    assert not np.array_equal(epochs(seed=2, count=1)[0], first[0])


def test_an_epochs_order_is_a_permutation_of_the_seed_and_the_epoch_alone(numbers, monkeypatch):
    def orders(rank, seed=1):
        monkeypatch.setattr(btbptt, "_distributed_rank_and_size", lambda: (rank, 2))
        loader = numbers(700, 7, batch_size=1, shuffle=True, seed=seed)
        random.seed(rank), np.random.seed(rank)  # what else a worker draws does not move it
        return [loader.document_order(1000, epoch) for epoch in range(3)]

    first = orders(rank=0)
    for order in first:
        assert isinstance(order, np.ndarray) and order.dtype == np.int64 and order.shape == (1000,)
        np.testing.assert_array_equal(np.sort(order), np.arange(1000))
    assert not any(np.array_equal(a, b) for a, b in [(first[0], first[1]), (first[1], first[2])])
    np.testing.assert_array_equal(first[0], np.random.default_rng([1, 0]).permutation(1000))  # as documented
    assert all(np.array_equal(a, b) for a, b in zip(orders(rank=1), first))  # every worker draws the same
    assert not np.array_equal(orders(rank=0, seed=2)[0], first[0])
    np.testing.assert_array_equal(numbers(700, 7, batch_size=1).document_order(1000, 5), np.arange(1000))
    with pytest.raises(ConfigurationError, match="seed must be at least 0, got -1"):
        numbers(700, 7, batch_size=1, seed=-1)
    with pytest.raises(ConfigurationError, match="max_shuffle_blocks must be at least 1, got 0"):
        numbers(700, 7, batch_size=1, max_shuffle_blocks=0)


def write_store(directory, documents, length=3):
    """A store of `documents` documents of `length` ids each: document d is the ids `length x d` onwards."""
    directory.mkdir()
    np.arange(length * documents, dtype=np.int32).tofile(directory / "ids.bin")
    np.save(directory / "offsets.npy", np.arange(0, length * documents + 1, length, dtype=np.int64))
    manifest = {"format": 1, "dtype": "int32", "num_documents": documents, "num_tokens": length * documents}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return TokenStore(str(directory))


def test_an_epochs_start_holds_the_same_memory_whatever_the_number_of_documents(tmp_path, numbers):
    """
    Above `max_shuffle_blocks` documents, the order and the stream's ends hold one int64 per block, by
    tracemalloc (numpy's arrays included); below it, one per document.
    """
    loader = numbers(700, 7, batch_size=1, shuffle=True, max_shuffle_blocks=50_000)
    peaks = {}
    for documents in (40_000, 200_000, 1_000_000):
        opened = write_store(tmp_path / f"store{documents}", documents)
        tracemalloc.start()
        try:
            stream = opened.stream(*loader.epoch_blocks(opened.num_documents, epoch=0))
            peaks[documents] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        order = loader.document_order(opened.num_documents, epoch=0)
        assert stream.length == 3 * documents
        np.testing.assert_array_equal(stream.read(2, 5), [3 * order[0] + 2, 3 * order[1], 3 * order[1] + 1])
    assert peaks[40_000] >= 40_000 * 16  # one block per document: two int64 arrays of 40,000
    assert abs(peaks[1_000_000] - peaks[200_000]) < 1_000, peaks  # 50,000 blocks either way
    # The order, the ends, where the blocks start, and the chunked lookup's temporaries (at most 3 x 50,000).
    assert peaks[1_000_000] < 50_000 * 8 * 6, peaks


def test_a_large_store_is_shuffled_by_blocks_of_consecutive_documents(tmp_path, numbers):
    """
    7 blocks at most: 20 documents make 7 blocks of 3 (the last of 2), each kept in order; 7 or fewer
    documents are shuffled one by one, by the documented permutation.
    """
    loader = numbers(700, 7, batch_size=1, shuffle=True, seed=5, max_shuffle_blocks=7)
    blocks, block_size = loader.epoch_blocks(20, epoch=2)
    assert block_size == 3 and sorted(blocks.tolist()) == list(range(7))
    np.testing.assert_array_equal(blocks, np.random.default_rng([5, 2]).permutation(7))
    order = loader.document_order(20, epoch=2)
    expected = [d for b in blocks.tolist() for d in range(3 * b, min(3 * b + 3, 20))]
    assert order.tolist() == expected and sorted(expected) == list(range(20))
    assert not np.array_equal(order, loader.document_order(20, epoch=3))
    np.testing.assert_array_equal(
        loader.document_order(7, epoch=2), np.random.default_rng([5, 2]).permutation(7)
    )
    # The stream reads the blocks' ids in that order, across the blocks' edges.
    stream = write_store(tmp_path / "store", 20).stream(blocks, block_size)
    laid_out = np.concatenate([np.arange(3 * d, 3 * d + 3) for d in order])
    assert stream.length == len(laid_out) == 60
    for start, stop in [(0, 60), (5, 23), (8, 9), (13, 13), (55, 60)]:
        np.testing.assert_array_equal(stream.read(start, stop), laid_out[start:stop])
    # Unshuffled, the blocks are in order: the corpus's stream.
    unshuffled = numbers(700, 7, batch_size=1, shuffle=False, max_shuffle_blocks=7)
    np.testing.assert_array_equal(unshuffled.document_order(20, epoch=2), np.arange(20))


def test_batches_over_blocks_hold_whole_blocks_in_their_epochs_order(numbers):
    """Through the loader: 100 documents of 7 numbers in at most 30 blocks (of 4), each epoch its own order."""

    def epochs(count=2, **options):
        loader = numbers(700, 7, batch_size=1, shuffle=True, seed=1, bidirectional=False, **options)
        streams = [
            np.concatenate([b["tokens"]["tokens"]["tokens"].numpy().ravel() for b in loader])
            for _ in range(count)
        ]
        return loader, streams

    loader, streams = epochs(max_shuffle_blocks=30)
    for epoch, stream in enumerate(streams):
        order = loader.document_order(100, epoch)
        np.testing.assert_array_equal(stream, np.concatenate([np.arange(7 * d, 7 * d + 7) for d in order]))
        blocks = stream.reshape(-1, 28)  # 25 blocks of 4 documents, each the numbers of its 4 in order
        np.testing.assert_array_equal(blocks - blocks[:, :1], np.tile(np.arange(28), (25, 1)))
    assert not np.array_equal(streams[0], streams[1])
    assert not np.array_equal(streams[0], epochs(count=1)[1][0])  # the default moves every document


def test_a_resumed_run_replays_to_the_batches_of_an_uninterrupted_one(numbers):
    """
    AllenNLP resumes with a new loader that it iterates from epoch 0, skipping the batches the checkpoint had
    trained on; python's and numpy's generators are seeded at start-up, not restored.
    """

    def epoch(loader):
        return [(b["tokens"]["tokens"]["tokens"].tolist(), b["window_keys"].tolist()) for b in loader]

    uninterrupted = numbers(700, 7, batch_size=2, shuffle=True, seed=4)
    expected = []
    for _ in range(3):
        expected.append(epoch(uninterrupted))
        random.random(), np.random.rand()  # training draws from the global generators
    resumed = numbers(700, 7, batch_size=2, shuffle=True, seed=4)
    replayed = [epoch(resumed), epoch(resumed)[3:], epoch(resumed)]  # checkpoint: epoch 1, 3 batches done
    assert replayed == [expected[0], expected[1][3:], expected[2]] and len(expected[1]) > 3


def test_builds_from_a_config_with_the_real_reader_and_yields_the_reader_stream(tmp_path):
    corpus = str(FIXTURES_ROOT / "lm" / "corpus.txt")
    vocab = str(FIXTURES_ROOT / "lm" / "vocab.txt")
    reader_params = {"type": "maelmo_mlm_corpus", "tokenizer": {"type": "maelmo_wordpiece", "vocab": vocab}}
    reader = DatasetReader.from_params(Params(copy.deepcopy(reader_params)))
    stream = [ids for _, paragraph in reader.paragraphs_by_document(corpus) for ids in paragraph]
    # As allennlp train builds it: a Lazy data loader given the reader and the data path.
    loader_params = Params(
        {
            "type": "maelmo_btbptt",
            "batch_size": 2,
            "sequence_length": 6,
            "shuffle": False,
            "bidirectional": False,
            "cache_directory": str(tmp_path),
        }
    )
    loader = Lazy(DataLoader, params=loader_params).construct(reader=reader, data_path=corpus)
    seen = batches(loader)
    rows = np.stack([tokens for tokens, _, _ in seen], 1).reshape(2, -1)
    per_row = rows.shape[1]
    assert rows.tolist() == [stream[:per_row], stream[per_row : 2 * per_row]]


def real_loader(cache, **options):
    vocab = str(FIXTURES_ROOT / "lm" / "vocab.txt")
    reader = DatasetReader.from_params(
        Params(
            {
                "type": "maelmo_mlm_corpus",
                "tokenizer": {"type": "maelmo_wordpiece", "vocab": vocab},
            }
        )
    )
    corpus = str(FIXTURES_ROOT / "lm" / "corpus.txt")
    return BtbpttDataLoader(
        reader, corpus, batch_size=2, sequence_length=4, cache_directory=str(cache), quiet=True, **options
    )


def epoch_tokens(loader):
    return np.concatenate([tokens for tokens, _, _ in batches(loader)])


def test_each_epoch_lays_out_the_stored_documents_in_its_own_order(tmp_path):
    loader = real_loader(tmp_path, seed=3)
    documents = {}
    for document, ids in loader.reader.paragraphs_by_document(loader.data_path):
        documents.setdefault(document, []).extend(ids)
    documents = [documents[d] for d in sorted(documents)]
    epochs = [batches(loader) for _ in range(3)]
    orders = [loader.document_order(len(documents), epoch) for epoch in range(3)]
    assert not np.array_equal(orders[0], orders[1])  # documents are reshuffled every epoch
    for order, seen in zip(orders, epochs):
        stream = np.concatenate([documents[d] for d in order])
        first_row = np.concatenate([tokens[0] for tokens, _, _ in seen])
        np.testing.assert_array_equal(first_row, stream[: len(first_row)])


def test_an_epochs_batches_do_not_depend_on_other_reads_of_the_same_reader(tmp_path):
    # A validation loader reading with the same reader between epochs must not move the training order,
    # or a run resumed from a checkpoint (which replays no validation) would see other batches.
    plain, interleaved = real_loader(tmp_path, seed=5), real_loader(tmp_path, seed=5)
    for _ in range(3):
        list(interleaved.reader.read(interleaved.data_path))  # what validation does
        np.testing.assert_array_equal(epoch_tokens(plain), epoch_tokens(interleaved))


def test_length_is_known_before_the_first_epoch(tmp_path):
    loader = real_loader(tmp_path)
    assert len(loader) == len(batches(loader)) > 0


def _distributed_worker(rank, world_size, init_file, out_dir):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    try:
        corpus = os.path.join(out_dir, "numbers.txt")  # written before the workers start; names the corpus
        loader = BtbpttDataLoader(
            NumberedStreamReader(1000),
            corpus,
            batch_size=3,
            sequence_length=8,
            shuffle=False,
            cache_directory=os.path.join(out_dir, "cache"),
            quiet=True,
        )
        tokens = np.concatenate([batch["tokens"]["tokens"]["tokens"].numpy().ravel() for batch in loader])
        np.save(os.path.join(out_dir, f"rank{rank}.npy"), tokens)
    finally:
        dist.destroy_process_group()


def test_two_gloo_workers_see_disjoint_tokens_and_lose_none_but_the_tail():
    with tempfile.TemporaryDirectory() as out_dir:
        init_file = os.path.join(out_dir, "init")
        with open(os.path.join(out_dir, "numbers.txt"), "w") as corpus:
            corpus.write("numbers")
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


def test_w_workers_of_b_rows_see_what_one_worker_of_w_times_b_rows_sees(numbers, monkeypatch):
    """Same tokens, directions and window keys per global row; B = 3 is odd, so parity must be global."""

    def run(rank, world_size, batch_size):
        monkeypatch.setattr(btbptt, "_distributed_rank_and_size", lambda: (rank, world_size))
        loader = numbers(1000, 8, batch_size=batch_size)
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


@pytest.mark.parametrize("stateful", [True, False])
def test_mask_by_position_gives_each_word_piece_its_place_in_the_stream(numbers, stateful):
    # The numbered stream: a word-piece's id is its place in the stream; padding (id 0 past the end) is -1.
    loader = numbers(23, 5, batch_size=2, stateful=stateful, mask_by_position=True)
    seen = list(loader)
    for batch in seen:
        ids, positions = batch["tokens"]["tokens"]["tokens"], batch["token_positions"]
        assert positions.shape == ids.shape and positions.dtype == torch.int64
        real = positions >= 0
        assert torch.equal(positions[real], ids[real])
        assert (ids[~real] == 0).all()
    covered = torch.cat([batch["token_positions"].reshape(-1) for batch in seen])
    expected = 20 if stateful else 23  # stateful rows drop the tail that fills no window
    assert sorted(covered[covered >= 0].tolist()) == list(range(expected))
    assert "token_positions" not in next(iter(numbers(23, 5, batch_size=2, stateful=stateful)))


def test_allennlp_train_shuffles_by_blocks_given_on_the_command_line(tmp_path):
    """`max_shuffle_blocks` below the fixture corpus's 3 documents, through `allennlp train -o`: it trains on
    blocks of 2 documents, and the archive's config keeps the setting."""
    from tests import run_allennlp

    run = tmp_path / "run"
    overrides = json.dumps({"data_loader.max_shuffle_blocks": 2, "trainer.num_epochs": 2})
    config = str(FIXTURES_ROOT / "lm" / "experiment.jsonnet")
    run_allennlp(["train", config, "-s", str(run), "--include-package", "maelmo_plugin", "-o", overrides], {})
    assert json.loads((run / "config.json").read_text())["data_loader"]["max_shuffle_blocks"] == 2
    losses = [json.loads((run / f"metrics_epoch_{e}.json").read_text())["training_loss"] for e in (0, 1)]
    assert all(np.isfinite(losses)) and losses[1] < losses[0], losses
