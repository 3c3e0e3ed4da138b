"""
The "maelmo_ddp" accelerator under sequential mask accumulation, on a pair of gloo workers: one gradient
all-reduce per update instead of k, and the same weights as AllenNLP's "torch" accelerator after the same
updates. The workers run the trainer's loop (k passes of one batch, each loss divided by k, one step), with
a comm hook that counts DDP's gradient all-reduces.
"""

import copy
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from allennlp.common import Params
from allennlp.data import DatasetReader, Vocabulary
from allennlp.models import Model
from allennlp.nn.parallel import DdpAccelerator
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

from maelmo_plugin.lm.data_loaders.btbptt import BtbpttDataLoader
from tests import FIXTURES_ROOT

K = 3
UPDATES = 4


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def counting_hook(state, bucket):
    state["all_reduces"] += 1
    return allreduce_hook(None, bucket)


def batches_for_ever(loader):
    while True:
        yield from loader


# (accelerator, the loader's passes per batch): both accelerators, then a loader that cuts batches short.
SCENARIOS = (("torch", K), ("maelmo_ddp", K), ("maelmo_ddp", K - 1))


def worker(rank, port, results):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        params = Params.from_file(FIXTURES_ROOT / "lm" / "experiment.jsonnet")
        vocab = Vocabulary.from_params(params.pop("vocabulary"))
        reader = DatasetReader.from_params(params.pop("dataset_reader"))
        model_params = params.pop("model").as_dict()
        model_params.update(num_mask_sets=K, mask_accumulation="sequential")
        for accelerator, passes in SCENARIOS:
            try:
                results[rank, accelerator, passes] = train(
                    vocab, reader, model_params, accelerator, passes, rank
                )
            except RuntimeError as error:  # raised on both workers before any collective: the group lives on
                results[rank, accelerator, passes] = str(error)
    finally:
        dist.destroy_process_group()


def train(vocab, reader, model_params, accelerator, passes, rank):
    """(gradient all-reduces, weights) after UPDATES updates of the trainer's loop (k passes, one step)."""
    torch.manual_seed(3)
    model = Model.from_params(vocab=vocab, params=Params(copy.deepcopy(model_params)))
    loader = BtbpttDataLoader(
        reader, str(FIXTURES_ROOT / "lm" / "corpus.txt"), batch_size=1, sequence_length=12, quiet=True,
        mask_accumulation_passes=passes,
    )  # fmt: skip
    loader.index_with(vocab)
    _, wrapped = DdpAccelerator.by_name(accelerator)(local_rank=rank, world_size=2).wrap_model(model)
    ddp = wrapped.model
    state = {"all_reduces": 0}
    ddp.register_comm_hook(state, counting_hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.train()
    batches = batches_for_ever(loader)
    for _ in range(UPDATES):
        optimizer.zero_grad()
        for _ in range(K):
            (ddp(**next(batches))["loss"] / K).backward()
        optimizer.step()
    return state["all_reduces"], {
        name: parameter.detach().clone() for name, parameter in model.named_parameters()
    }


@pytest.fixture(scope="module")
def results():
    """Every scenario's outcome on each of the two workers, keyed (rank, accelerator, passes)."""
    port = free_port()
    with mp.Manager() as manager:
        shared = manager.dict()
        spawn = mp.get_context("spawn")
        processes = [spawn.Process(target=worker, args=(rank, port, shared)) for rank in (0, 1)]
        for process in processes:
            process.start()
        for process in processes:
            process.join(timeout=240)
            assert process.exitcode == 0, f"worker failed (exit code {process.exitcode})"
        return dict(shared)


def test_maelmo_ddp_reduces_once_per_update_where_torch_reduces_k_times(results):
    torch_count, torch_weights = results[0, "torch", K]
    ours_count, ours_weights = results[0, "maelmo_ddp", K]
    assert ours_count > 0 and ours_count % UPDATES == 0
    assert torch_count == K * ours_count  # DDP's buckets, k times per update against once
    # The same updates: one all-reduce of the summed gradients equals the sum of k all-reduces.
    for name, weight in torch_weights.items():
        torch.testing.assert_close(ours_weights[name], weight, atol=1e-6, rtol=1e-5, msg=name)
    # The workers stay in step.
    for name, weight in ours_weights.items():
        assert torch.equal(results[1, "maelmo_ddp", K][1][name], weight), name


def test_a_batch_cut_short_of_its_passes_is_refused_before_the_workers_step_apart(results):
    for rank in (0, 1):
        error = results[rank, "maelmo_ddp", K - 1]
        assert isinstance(error, str), "the workers trained with unreduced gradients"
        assert f"after {K - 1} of its {K} mask-accumulation passes" in error
        assert f"num_gradient_accumulation_steps to the model's num_mask_sets ({K})" in error
