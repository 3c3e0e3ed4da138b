"""
`torchrun [its options] -m maelmo_plugin train CONFIG -s DIR [train options]`: each process torchrun starts is
one worker of the run, with the rank, world size and rendezvous torchrun gives it, and no `distributed` block
in the config. AllenNLP's own launcher (the `distributed` block) starts its workers with `mp.spawn` and reads
none of torchrun's variables; torch's elastic launcher brings what it lacks: one command for one or many
machines (`--standalone`, or `--nnodes N --rdzv-backend c10d --rdzv-endpoint HOST:PORT`, Slurm's `srun` around
it), and restarts (`--max-restarts K`: after a failure, every worker is started again with the same arguments).

So the same command must resume. When DIR holds a run of the same config, the workers continue from its last
checkpoint, exactly as `-r` does (the `maelmo_exact_resume` callback restores every worker's carried states,
loader position and random streams): a run killed anywhere ends with the weights of an uninterrupted one, bit
for bit. A DIR of another config is refused in one line naming what changed; `-f` replaces a DIR only at the
first start (`TORCHELASTIC_RESTART_COUNT` 0), never at a restart. Exact resume needs the same world size, so
elastic resizing (`--nnodes MIN:MAX`) is not supported: the checkpoint records the world size, and another one
is refused.

The worker is AllenNLP's `_train_worker` without its own process-group set-up: the group comes from torchrun's
environment (NCCL when the config trains on a GPU, each worker on the device `LOCAL_RANK`; gloo on CPUs). Global
rank 0 is the primary: it prepares DIR, writes the checkpoints and, when every worker has finished, the
archive. DIR must therefore be one folder that every node reads (a shared file system): a worker resumes from
the checkpoint rank 0 wrote. The model is wrapped by the "maelmo_ddp" accelerator (one gradient all-reduce per
update under sequential mask accumulation). The process group is destroyed at exit.
"""

import argparse
import datetime
import json
import logging
import os
import sys
from typing import Any, Optional

import torch
import torch.distributed as dist
from allennlp.commands.train import Train, TrainModel
from allennlp.common import Params
from allennlp.common import logging as common_logging
from allennlp.common import util as common_util
from allennlp.common.checks import ConfigurationError
from allennlp.common.meta import META_NAME, Meta
from allennlp.models import archival
from allennlp.models.archival import CONFIG_NAME, verify_include_in_archive
from allennlp.training import util as training_util

from maelmo_declarations.refusals import Refusal, check_serialization_dir
from maelmo_plugin.training import run_folder
from maelmo_plugin.training.ddp_accelerator import MaskAccumulatingDdpAccelerator

logger = logging.getLogger(__name__)

TORCHRUN_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
# Any of these says that this process was meant to be one worker of several.
WORKER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID")
WORLD_FILE = "torchrun_world.json"  # the world size a DIR was trained with


def under_torchrun(environ: Optional[dict[str, str]] = None) -> bool:
    """
    Whether this process is a worker that torchrun (torch.distributed.run) started, once its environment
    is checked: a `ConfigurationError` naming the variable when some of torchrun's variables are set and not
    the others (a plain run would silently train alone), or when they disagree (RANK >= WORLD_SIZE would
    wait for a worker that never comes).
    """
    environ = dict(os.environ if environ is None else environ)
    # MASTER_ADDR and MASTER_PORT alone say nothing: many clusters export them for every job.
    present = [name for name in WORKER_VARIABLES if name in environ]
    if not present:
        return False
    missing = [name for name in (*TORCHRUN_VARIABLES, "TORCHELASTIC_RUN_ID") if name not in environ]
    if missing:
        raise ConfigurationError(
            f"{', '.join(present)} {'is' if len(present) == 1 else 'are'} set and {', '.join(missing)} not: "
            f"start the workers with torchrun (`torchrun ... -m maelmo_plugin train ...`), which sets them "
            f"all, or unset {', '.join(present)} to train in one process."
        )
    numbers = {}
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_PORT"):
        if not (environ[name].isascii() and environ[name].isdigit() and len(environ[name]) <= 6):
            raise ConfigurationError(f"{name}={environ[name]!r} is not a count: torchrun sets it to one.")
        numbers[name] = int(environ[name])
    if (
        not (numbers["RANK"] < numbers["WORLD_SIZE"] and numbers["LOCAL_RANK"] < numbers["LOCAL_WORLD_SIZE"])
        or numbers["LOCAL_WORLD_SIZE"] > numbers["WORLD_SIZE"]
    ):
        raise ConfigurationError(
            f"RANK={numbers['RANK']}, WORLD_SIZE={numbers['WORLD_SIZE']}, LOCAL_RANK={numbers['LOCAL_RANK']}, "
            f"LOCAL_WORLD_SIZE={numbers['LOCAL_WORLD_SIZE']}: a rank must be below its world size (ranks count "
            f"from 0); let torchrun set these variables."
        )
    return True


def train_parser() -> argparse.ArgumentParser:
    """The parser of `train ...` in a torchrun worker: `allennlp train`'s, with `--include-package`."""
    parser = argparse.ArgumentParser(prog="torchrun ... -m maelmo_plugin")
    subparsers = parser.add_subparsers()
    train_subparser = Train().add_subparser(subparsers)
    train_subparser.add_argument("--include-package", action="append", default=[])
    return parser


def parse_train(argv: list[str]) -> argparse.Namespace:
    """`argv` (`train CONFIG -s DIR ...`) parsed, its packages imported; -r with -f refused."""
    args = train_parser().parse_args(argv)
    for package in args.include_package:
        common_util.import_module_and_submodules(package)
    if args.recover and args.force:
        raise Refusal("give -r or -f, not both (under torchrun the same command resumes anyway)")
    return args


def train_command(argv: list[str]) -> None:
    """`maelmo train ...` in a torchrun worker: the arguments of `allennlp train`, the run described above."""
    args = parse_train(argv)
    params = Params.from_file(args.param_path, args.overrides)
    train(params, args.serialization_dir, args.force, args.include_package, args.file_friendly_logging)


def check_config(params: Params) -> None:
    """What a config that torchrun runs must not hold."""
    if "distributed" in params:
        raise Refusal(
            "Under torchrun the workers come from torchrun: remove the config's distributed block (or run "
            "`allennlp train` without torchrun to use it)."
        )
    if "evaluation" in params:
        # AllenNLP 2.10.1's training has no evaluator yet: `allennlp train` drops the block without a word.
        raise Refusal(
            "The config's evaluation block is not run by AllenNLP 2.10.1's training (plain `allennlp train` "
            "drops it unread): remove it, and evaluate the archive with `allennlp evaluate`."
        )


def finished_message(serialization_dir: str) -> str:
    return (
        f"{serialization_dir} holds a finished run of this config (model.tar.gz): it is left as it is. Give "
        f"another -s to train again, or -f to replace it."
    )


def train(
    params: Params,
    serialization_dir: str,
    force: bool = False,
    include_package: Optional[list[str]] = None,
    file_friendly_logging: bool = False,
) -> None:
    """This worker's part of the run; returns once every worker has finished and rank 0 has archived."""
    check_config(params)
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    on_gpu = params.get("trainer", {}).get("cuda_device", -1) not in (-1, None)
    if on_gpu:
        torch.cuda.set_device(local_rank)
    dist.init_process_group(
        backend="nccl" if on_gpu else "gloo",
        store=_attempt_store(world_size),
        rank=rank,
        world_size=world_size,
    )
    try:
        state = _prepare_directory(params, serialization_dir, force, rank, world_size)
        if state == "finished":
            if rank == 0:
                print(finished_message(serialization_dir), file=sys.stderr)
            return
        recover = state == "resume"
        include_in_archive = params.pop("include_in_archive", None)
        verify_include_in_archive(include_in_archive)
        _train_worker(params, serialization_dir, rank, world_size, local_rank if on_gpu else -1, recover)
        dist.barrier()
        if rank == 0:
            # Looked up at call time: the plugin's shim signs every archive (maelmo_plugin/common/integrity.py).
            archival.archive_model(serialization_dir, include_in_archive=include_in_archive)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _attempt_store(world_size: int) -> dist.Store:
    """
    The rendezvous store of this attempt: torchrun's (`MASTER_ADDR:MASTER_PORT`, the agent's store when
    `TORCHELASTIC_USE_AGENT_STORE`), under a prefix of the run and the restart count. `env://` uses the agent's
    store without a prefix, so after a restart a worker may read the address a dead worker of the last attempt
    left there, and fail with gloo's "connectFullMesh failed ... Connection refused" (seen with torch 2.14,
    whenever the workers take seconds to start, as AllenNLP's imports do).
    """
    agent_store = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    store = dist.TCPStore(
        os.environ["MASTER_ADDR"],
        int(os.environ["MASTER_PORT"]),
        world_size,
        is_master=not agent_store and os.environ["RANK"] == "0",
        timeout=datetime.timedelta(minutes=30),
    )
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    return dist.PrefixStore(f"maelmo/{os.environ['TORCHELASTIC_RUN_ID']}/attempt_{attempt}", store)


def _prepare_directory(
    params: Params, serialization_dir: str, force: bool, rank: int, world_size: int
) -> str:
    """
    On rank 0: a new DIR, or the refusal of one of another config or world size; whether the run starts
    ("new"), resumes ("resume") or has finished ("finished"). Every rank gets rank 0's answer (or its error),
    so that all stop or all go on together.
    """
    answer: list[Any] = [None]
    if rank == 0:
        try:
            answer[0] = ("ok", _prepare_on_primary(params, serialization_dir, force, world_size))
        except (Refusal, ConfigurationError) as error:
            answer[0] = ("error", str(error))
    dist.broadcast_object_list(answer, src=0)
    kind, value = answer[0]
    if kind == "error":
        raise Refusal(value)
    return value


def check_run(params: Params, serialization_dir: str, force: bool, world_size: int, first_start: bool) -> str:
    """
    What the run will be, read without changing anything: "new" (DIR new, empty, or replaced by `force` at the
    first start), "resume" (DIR holds this config's unfinished run) or "finished"; a `Refusal` naming what does
    not fit. Run by the `maelmo-torchrun` launcher before any worker starts (`launcher.py`), and by rank 0 at
    the start of every attempt.
    """
    check_config(params)
    check_serialization_dir(serialization_dir)
    if force and first_start and os.path.lexists(serialization_dir):
        run_folder.check_force(serialization_dir, run_folder.config_inputs(params))
        return "new"
    config_file = os.path.join(serialization_dir, CONFIG_NAME)
    if os.path.isfile(config_file):
        try:
            recorded = Params.from_file(config_file).as_flat_dict()
        except (RuntimeError, ValueError) as error:  # Jsonnet's errors, JSON that is not an object
            raise Refusal(
                f"{serialization_dir} holds a {CONFIG_NAME} that is no training run's ({str(error).splitlines()[0]}): "
                f"give another -s."
            ) from None
        changed = _changes(recorded, params.as_flat_dict())
        if changed:
            raise Refusal(
                f"{serialization_dir} holds a run of another config ({'; '.join(changed[:5])}"
                f"{'; ...' if len(changed) > 5 else ''}): give another -s, or -f to replace it."
            )
        if os.path.isfile(os.path.join(serialization_dir, "model.tar.gz")):
            return "finished"
        # No record: `allennlp train` trained it, in one process (a distributed block is a changed config).
        trained_with = _read_world(serialization_dir) or 1
        if trained_with != world_size:
            raise Refusal(
                f"{serialization_dir} was trained by {trained_with} worker{'s' if trained_with > 1 else ''} and "
                f"this run has {world_size}: exact resume needs the same number (each worker carries its own "
                f"rows' LSTM states and random streams); start torchrun with {trained_with} in all, or give "
                f"another -s."
            )
        return "resume"
    if os.path.isdir(serialization_dir) and os.listdir(serialization_dir):
        raise Refusal(
            f"{serialization_dir} exists and holds no run (no {CONFIG_NAME}): give another -s, or -f to replace it."
        )
    return "new"


def _prepare_on_primary(params: Params, serialization_dir: str, force: bool, world_size: int) -> str:
    first_start = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
    state = check_run(params, serialization_dir, force, world_size, first_start)
    if force and first_start and os.path.lexists(serialization_dir):
        run_folder.remove_for_force(serialization_dir, run_folder.config_inputs(params))
    if state == "finished":
        return state
    recover = state == "resume"
    config_file = os.path.join(serialization_dir, CONFIG_NAME)
    training_util.create_serialization_dir(params, serialization_dir, recover, force=False)
    # The world size before the config: a folder with a config always says how many workers trained it.
    with open(os.path.join(serialization_dir, WORLD_FILE), "w", encoding="utf-8") as stream:
        json.dump({"world_size": world_size}, stream)
    params.to_file(config_file)
    # The versions that trained it, which archive_model puts in model.tar.gz, as `allennlp train` does.
    Meta.new().to_file(os.path.join(serialization_dir, META_NAME))
    return state


def _changes(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    return [
        f"{key}: {before.get(key)!r} then, {now.get(key)!r} now"
        for key in sorted(set(before) | set(now))
        if before.get(key) != now.get(key)
    ]


def _read_world(serialization_dir: str) -> Optional[int]:
    try:
        with open(os.path.join(serialization_dir, WORLD_FILE), encoding="utf-8") as stream:
            return int(json.load(stream)["world_size"])
    except (OSError, ValueError, KeyError):
        return None


def _train_worker(
    params: Params, serialization_dir: str, rank: int, world_size: int, device: int, recover: bool
) -> None:
    """
    AllenNLP's `_train_worker`, in a process group that already exists; rank 0 is the primary. The trainer
    restores DIR's newest checkpoint by itself when there is one.
    """
    common_logging.prepare_global_logging(serialization_dir, rank=rank, world_size=world_size)
    if recover:
        logger.info("Continuing the run in %s from its last checkpoint", serialization_dir)
    common_util.prepare_environment(params)
    params["trainer"]["cuda_device"] = device
    # AllenNLP's trainer refuses "distributed" training on one device: a world of one (one GPU of a node, a
    # recipe run with one task) trains as `allennlp train` does, in the process group torchrun made.
    accelerator = None
    if world_size > 1:
        params["trainer"]["world_size"] = world_size
        params["trainer"]["distributed"] = True
        # "maelmo_ddp": AllenNLP's "torch" DDP, with one gradient all-reduce per update under sequential mask
        # accumulation (there is no distributed block here to name an accelerator in).
        accelerator = MaskAccumulatingDdpAccelerator(
            local_rank=rank, world_size=world_size, cuda_device=device
        )
    train_loop = TrainModel.from_params(
        params=params, serialization_dir=serialization_dir, local_rank=rank, ddp_accelerator=accelerator
    )
    dist.barrier()
    metrics = train_loop.run()
    if rank == 0:
        train_loop.finish(metrics)
