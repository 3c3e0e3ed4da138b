"""
`maelmo-embed`'s arguments and the refusals that need no model (`maelmo_plugin/commands/embed.py` runs it).
"""

import argparse
import os

from maelmo_declarations.command import Command
from maelmo_declarations.options import POOLING, PRECISIONS, STORAGES, layer_argument, shard_argument
from maelmo_declarations.owned_outputs import check_file_output
from maelmo_declarations.refusals import (
    Refusal,
    check_batch_size,
    check_cuda_device_id,
    check_input_file,
    check_processes,
)

NAME = "maelmo-embed"


def check(args: argparse.Namespace) -> None:
    """What the command refuses before it loads anything: the archive, the options, the output, the input."""
    if not os.path.exists(args.archive_file):  # a mistyped archive path starts no job
        raise Refusal(
            f"No such archive: {args.archive_file!r}. Give a model.tar.gz, its serialization directory or "
            f"a maelmo-export directory."
        )
    check_batch_size(args.batch_size)
    check_processes(args.processes, args.cuda_device >= 0)
    check_cuda_device_id(args.cuda_device)
    check_input_file(args.input_file)  # first: an output inside an input folder would name the folder
    inputs = [args.input_file, args.archive_file]
    check_file_output(args.output_file, NAME, args.force, inputs, example="vectors.hdf5")


def add_arguments(subparser: argparse.ArgumentParser) -> None:
    subparser.add_argument(
        "archive_file",
        help="a model.tar.gz of maelmo_masked_elmo_lm (any encoder; a transformer's lines at most its "
        "max_positions word-pieces) or maelmo_elmo_lm, or a maelmo-export directory",
    )
    subparser.add_argument(
        "input_file", help="a UTF-8 text file, one sentence per line (plain, or gzip, bzip2 or xz)"
    )
    subparser.add_argument("output_file", help="the HDF5 file to write (an existing one only with --force)")
    subparser.add_argument("--batch-size", type=int, default=64, help="sentences per batch")
    subparser.add_argument("--cuda-device", type=int, default=-1, help="GPU id, or -1 for the CPU")
    subparser.add_argument(
        "--layer",
        type=layer_argument,
        default=None,
        help="one layer (0 = embeddings, -1 = top) or 'mix'; default all",
    )
    subparser.add_argument(
        "--pool",
        choices=POOLING,
        default=None,
        help="pool word-pieces into words (first, mean) or into one vector per line (sentence)",
    )
    subparser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="fp32",
        help="of the encoder's products: int8 or bf16 on a CPU are faster and approximate (int8 the faster, "
        "bf16 the closer); auto: int8 where it applies, else fp32 (default fp32)",
    )
    subparser.add_argument(
        "--storage",
        choices=STORAGES,
        default="float32",
        help="the vectors' type in OUTPUT: float16 halves the file (its rounding: docs/embedding.md); the "
        "command states OUTPUT's size before it starts, and refuses when the disk cannot hold it",
    )
    subparser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="worker processes, each embedding one batch at a time with one torch thread, to use several "
        "CPU cores (default 1: this process, with torch's threads)",
    )
    subparser.add_argument(
        "--shard",
        type=shard_argument,
        default=None,
        metavar="K/N",
        help="embed only the K-th (from 0) of N parts of INPUT, for N machines or GPUs; join the N files "
        "with `maelmo maelmo-merge OUTPUT SHARD...`",
    )
    subparser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing OUTPUT (left as it is until the new one is complete), and discard an "
        "unfinished run of other settings",
    )


COMMAND = Command(
    name=NAME,
    description="Write the Masked ELMo vectors of a file of sentences (one per line) to HDF5.",
    add_arguments=add_arguments,
    check=check,
    job="maelmo_plugin.commands.embed:run",
    requires_plugins=True,
)
