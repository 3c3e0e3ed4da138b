"""
`maelmo maelmo-torchrun [torchrun's options] train CONFIG -s DIR [train options]`: torch's own elastic launcher
(`torch.distributed.run`, what the `torchrun` command runs), started once the run is checked. Everything that
would refuse the run in its workers is refused here first, in one line, before a worker starts: a config that
changed over DIR, another world size, a folder that holds no run, `-f` over a folder no run claimed, a
`distributed` or `evaluation` block (`torchrun.py`'s checks, the ones rank 0 runs again at start). A refusal in
a worker would be torchrun's traceback, and restarted `--max-restarts` times.

torchrun's options pass through unchanged (`--nnodes`, `--nproc-per-node`, the rendezvous, `--max-restarts`,
...), and each worker runs `python -m maelmo_plugin train ...` as under `torchrun` itself (`torchrun.py`). On
several machines the same command runs on each, as torchrun's does; DIR is one folder every machine reads, so
each machine's check reads the same run.
"""

import argparse
import sys

from allennlp.common import Params

from maelmo_declarations.packaged_configs import resolve_in_command_line
from maelmo_declarations.refusals import Refusal
from maelmo_plugin.training import torchrun

# The options of `maelmo-torchrun` that are torchrun's, with the spelling torch.distributed.run takes.
TORCHRUN_OPTIONS = (
    "nnodes",
    "nproc_per_node",
    "node_rank",
    "rdzv_backend",
    "rdzv_endpoint",
    "rdzv_id",
    "max_restarts",
    "master_addr",
    "master_port",
)


def torchrun_argv(args: argparse.Namespace, train: list[str]) -> list[str]:
    """The command line of torch.distributed.run that this command runs."""
    argv = [f"--{name.replace('_', '-')}={getattr(args, name)}" for name in TORCHRUN_OPTIONS]
    return argv + ["--standalone"] * args.standalone + ["-m", "maelmo_plugin", *train]


def world_size(args: argparse.Namespace) -> int:
    """Machines times workers per machine, as torchrun counts them (gpu, cpu or auto on this machine)."""
    from torch.distributed.run import determine_local_world_size

    try:
        return int(args.nnodes) * determine_local_world_size(args.nproc_per_node)
    except ValueError as error:  # "gpu" where no GPU is visible
        raise Refusal(f"--nproc-per-node {args.nproc_per_node}: {error} Give a count, or cpu.") from None


def run(args: argparse.Namespace) -> None:
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import get_args_parser
    from torch.distributed.run import run as launch

    try:
        train = resolve_in_command_line(args.train)
    except ValueError as error:
        raise Refusal(str(error)) from None
    train_args = torchrun.parse_train(train)
    params = Params.from_file(train_args.param_path, train_args.overrides)
    size = world_size(args)
    state = torchrun.check_run(params, train_args.serialization_dir, train_args.force, size, first_start=True)
    if state == "finished":
        print(torchrun.finished_message(train_args.serialization_dir), file=sys.stderr)
        return
    try:
        launch(get_args_parser().parse_args(torchrun_argv(args, train)))
    except ChildFailedError as failure:
        rank, first = failure.get_first_failure()
        print(
            f"maelmo-torchrun: worker {rank} of {size} failed (exit code {first.exitcode}): its error is above"
            + (
                ""
                if args.max_restarts
                else "; give --max-restarts N to restart the workers from the last checkpoint"
            ),
            file=sys.stderr,
        )
        sys.exit(1)
    print(f"Trained {train_args.serialization_dir} with {size} worker{'s' if size > 1 else ''}")
