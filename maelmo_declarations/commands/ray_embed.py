"""
`maelmo-ray-embed`'s arguments and the refusals that need neither Ray nor the model
(`maelmo_plugin/embedding/ray_data.py` runs it): rows of id and text in, Parquet of id and vector out, embedded
by a pool of Ray actors on the cluster `ray.init()` joins (a local one when none is running).
"""

import argparse
import os

from maelmo_declarations.command import Command
from maelmo_declarations.options import layer_argument
from maelmo_declarations.owned_outputs import check_output
from maelmo_declarations.refusals import Refusal

NAME = "maelmo-ray-embed"


def add_arguments(subparser: argparse.ArgumentParser) -> None:
    subparser.add_argument(
        "input", help="JSON lines or Parquet with the columns id and text (a file or a directory)"
    )
    subparser.add_argument("output", help="the directory of Parquet files to write")
    subparser.add_argument(
        "--model", required=True, help="a model.tar.gz, or a maelmo-export --format onnx directory"
    )
    subparser.add_argument("--actors", type=int, default=2, help="actors, each with the model loaded once")
    subparser.add_argument(
        "--layer", type=layer_argument, default=-1, help="a layer (0 = embeddings, -1 = top) or 'mix'"
    )
    subparser.add_argument(
        "--onnx-file", default="model.onnx", help="in an ONNX directory: model_int8.onnx for int8"
    )
    subparser.add_argument("--cpus-per-actor", type=float, default=1, help="each actor's CPUs, and threads")
    subparser.add_argument("--force", action="store_true", help="replace the Parquet files of a finished job")


def check(args: argparse.Namespace) -> None:
    """What is refused before Ray, pyarrow or the model is imported; the rows and the model are checked next."""
    if args.actors < 1 or not args.cpus_per_actor > 0:
        raise Refusal("--actors needs at least 1 and --cpus-per-actor more than 0")
    if not os.path.exists(args.model):
        raise Refusal(f"No such model: {args.model!r}: give a model.tar.gz or a maelmo-export directory.")
    if not os.path.exists(args.input):
        raise Refusal(f"No such input: {args.input!r}.")
    # Own unfinished folders continue; whether a folder of this command's is finished needs its Parquet files.
    check_output(args.output, NAME, True, inputs=[args.input, args.model], option="The output folder")


COMMAND = Command(
    name=NAME,
    description="Embed rows of id and text into Parquet of id and vector, with a pool of Ray actors.",
    add_arguments=add_arguments,
    check=check,
    job="maelmo_plugin.embedding.ray_data:run",
    requires_plugins=True,
)
