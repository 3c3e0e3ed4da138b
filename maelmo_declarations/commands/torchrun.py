"""
`maelmo-torchrun`'s arguments and the refusals that need no model (`maelmo_plugin/training/launcher.py` runs it):
torch's elastic launcher (torchrun) with the options a run on one or many machines needs, then `train` and
`allennlp train`'s own arguments, passed on to every worker.
"""

import argparse
import re

from maelmo_declarations.command import Command
from maelmo_declarations.refusals import Refusal, check_serialization_dir

NAME = "maelmo-torchrun"
# `allennlp train`'s options that take a value, to find `-s` among the train arguments.
_SERIALIZATION_DIR = ("-s", "--serialization-dir")


def add_arguments(subparser: argparse.ArgumentParser) -> None:
    # torchrun's own options, with its defaults, passed to torch.distributed.run as they are.
    subparser.add_argument(
        "--nnodes", default="1", help="machines in the run (torchrun's; MIN:MAX is refused)"
    )
    subparser.add_argument(
        "--nproc-per-node",
        default="1",
        help="workers on this machine: a count, or gpu, cpu or auto (torchrun's)",
    )
    subparser.add_argument(
        "--node-rank", type=int, default=0, help="this machine's rank, with a static rendezvous"
    )
    subparser.add_argument("--rdzv-backend", default="static", help="the rendezvous backend (torchrun's)")
    subparser.add_argument("--rdzv-endpoint", default="", help="HOST:PORT of the rendezvous (torchrun's)")
    subparser.add_argument("--rdzv-id", default="none", help="the run's id at the rendezvous (torchrun's)")
    subparser.add_argument(
        "--standalone", action="store_true", help="one machine, with a rendezvous of its own (torchrun's)"
    )
    subparser.add_argument(
        "--max-restarts",
        type=int,
        default=0,
        help="restart every worker this many times after a failure; each restart resumes the run",
    )
    subparser.add_argument("--master-addr", default="127.0.0.1", help="with a static rendezvous (torchrun's)")
    subparser.add_argument(
        "--master-port", type=int, default=29500, help="with a static rendezvous (torchrun's)"
    )
    subparser.add_argument(
        "train",
        nargs=argparse.REMAINDER,
        metavar="train CONFIG -s DIR ...",
        help="`train` and `allennlp train`'s arguments, which every worker runs",
    )


def serialization_dir(train: list[str]) -> str:
    """The `-s` among `train`'s arguments ('' when missing)."""
    for index, token in enumerate(train):
        if token in _SERIALIZATION_DIR and index + 1 < len(train):
            return train[index + 1]
        for option in _SERIALIZATION_DIR:
            if token.startswith(option + "="):
                return token[len(option) + 1 :]
    return ""


def check(args: argparse.Namespace) -> None:
    """What is refused before anything is imported: the shape of the command, elastic sizes, `-s` a file."""
    if args.train[:1] != ["train"] or len(args.train) < 2:
        raise Refusal(
            "maelmo-torchrun runs training: give torchrun's options, then `train CONFIG -s DIR` (e.g. "
            "maelmo maelmo-torchrun --standalone --nproc-per-node 2 train lm/pretrain_small -s runs/ddp)."
        )
    if not re.fullmatch(r"[0-9]{1,4}", args.nnodes) or int(args.nnodes) < 1:
        raise Refusal(
            f"--nnodes {args.nnodes}: give the number of machines (a fixed number: exact resume needs the same "
            f"world size at every restart, so torchrun's elastic MIN:MAX is not supported)."
        )
    count = re.fullmatch(r"[0-9]{1,4}", args.nproc_per_node) and int(args.nproc_per_node) >= 1
    if not (count or args.nproc_per_node in ("gpu", "cpu", "auto")):
        raise Refusal(f"--nproc-per-node {args.nproc_per_node}: give a count from 1, or gpu, cpu or auto.")
    if args.max_restarts < 0:
        raise Refusal(f"--max-restarts must be at least 0, got {args.max_restarts}.")
    directory = serialization_dir(args.train)
    if not directory:
        raise Refusal("train needs -s DIR, the run's folder (one folder that every machine reads).")
    check_serialization_dir(directory)


COMMAND = Command(
    name=NAME,
    description="Pre-train on several processes, GPUs or machines: torchrun, with the run checked before it starts.",
    add_arguments=add_arguments,
    check=check,
    job="maelmo_plugin.training.launcher:run",
    requires_plugins=True,
)
