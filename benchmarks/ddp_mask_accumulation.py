"""
Sequential mask accumulation on a pair of gloo workers: the gradient all-reduces of one k=4 update, the
bytes they move and the update's time, with AllenNLP's "torch" accelerator (DDP all-reduces after each of
the k passes) and "maelmo_ddp" (after the last pass only, `maelmo_plugin/training/ddp_accelerator.py`).

Both workers run on this machine, one thread each, and time the two accelerators' updates interleaved (each
worker holds one model per accelerator). The all-reduces are counted by a DDP comm hook; the scalar
all-reduces the trainer and the loss make on each pass (AllenNLP's "done" flag, the masked-token count)
are the same with both accelerators and are not counted. The defaults are the CPU-size config's
(`pretrain_small.jsonnet`: d=128, 512 cells, batch 32 per worker, 64-token windows).

    .venv/bin/python benchmarks/ddp_mask_accumulation.py [--size DxCELLS] [--batch-size B] \
        [--record benchmarks/results/records/ddp_mask_accumulation.json]
"""

import socket

import common
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

K = 4
ACCELERATORS = ("torch", "maelmo_ddp")
TITLE = 'Sequential mask accumulation on 2 gloo workers: the all-reduces of "torch" and "maelmo_ddp"'


def main() -> None:
    parser = common.parser(__doc__)
    common.add_size_options(parser, "128x512", batch_size=32, sequence_length=64, vocab_size=True)
    parser.set_defaults(repeats=5)
    parser.add_argument("--record", help="also write the table's figures to this JSON file")
    args = parser.parse_args()
    if args.device != "cpu":
        parser.error("gloo workers on CPUs only: the pair shares this machine's cores")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mp.start_processes(worker, args=(args, port), nprocs=2, start_method="spawn")


def counting_hook(state: dict, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    if state["counting"]:
        state["all_reduces"] += 1
        state["bytes"] += bucket.buffer().numel() * bucket.buffer().element_size()
    return allreduce_hook(None, bucket)


def worker(rank: int, args, port: int) -> None:
    from allennlp.nn.parallel import DdpAccelerator

    import maelmo_plugin  # noqa: F401  registers "maelmo_ddp"

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        device = common.setup(args) if rank == 0 else torch.device("cpu")
        torch.set_num_threads(args.threads)
        dim, cells = common.parse_size(args.size)
        torch.manual_seed(args.seed + rank)
        token_ids = common.token_batch(args.vocab_size, args.batch_size, args.sequence_length, device)
        updates, counters = {}, {}
        for name in ACCELERATORS:
            torch.manual_seed(args.seed)
            model = common.masked_elmo_lm(
                args.vocab_size, dim, cells, num_mask_sets=K, mask_accumulation="sequential", dropout=0.0
            ).train()
            _, wrapped = DdpAccelerator.by_name(name)(local_rank=rank, world_size=2).wrap_model(model)
            counters[name] = {"counting": False, "all_reduces": 0, "bytes": 0}
            wrapped.model.register_comm_hook(counters[name], counting_hook)
            updates[name] = update(model, wrapped.model, token_ids)
        seconds = common.interleaved(updates, device, args.warmup, args.repeats)
        for name in ACCELERATORS:  # one more update each, counted
            counters[name]["counting"] = True
            updates[name]()
        if rank == 0:
            report(args, dim, cells, seconds, counters)
    finally:
        dist.destroy_process_group()


def update(model: torch.nn.Module, ddp: torch.nn.Module, token_ids: torch.Tensor):
    """One update as AllenNLP's trainer makes it: k passes through DDP, each loss divided by k, one Adam step."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)

    def losses():
        for mask_pass in range(K):
            yield ddp(**common.model_inputs(token_ids, mask_pass))["loss"] / K

    return lambda: common.adam_step(model, optimizer, losses)


def report(args, dim: int, cells: int, seconds: dict, counters: dict) -> None:
    setting = (
        f"2 gloo workers x {args.threads} thread(s); d={dim}, {cells} cells, batch {args.batch_size} x "
        f"{args.sequence_length} per worker, vocabulary {args.vocab_size}; k={K} sequential"
    )
    print(f"# {setting}")
    header = [
        "accelerator",
        "gradient all-reduces per update",
        "MB all-reduced per update",
        "s per update",
        "vs torch",
    ]
    rows = [
        [
            name,
            counters[name]["all_reduces"],
            f"{counters[name]['bytes'] / 1e6:.1f}",
            seconds[name],
            f"{seconds[name] / seconds['torch']:.2f}x",
        ]
        for name in ACCELERATORS
    ]
    common.print_table(header, rows)
    if args.record:
        data = {name: {**counters[name], "seconds_per_update": seconds[name]} for name in ACCELERATORS}
        machine = common.machine_description(torch.device("cpu"))
        common.write_record(args.record, TITLE, machine, header, rows, data, setting)


if __name__ == "__main__":
    main()
