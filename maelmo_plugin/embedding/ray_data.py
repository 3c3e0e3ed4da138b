"""
Bulk embedding on a Ray cluster, with Ray Data: a table of `id` and `text` rows in, Parquet of `id` and `vector`
out, embedded by a pool of actors that each load the model once.

    import ray
    from maelmo_plugin.embedding.ray_data import SentenceEmbedder, embed_dataset

    dataset = ray.data.read_json("s3://bucket/sentences/")          # rows {"id": ..., "text": ...}
    embed_dataset(dataset, "model.tar.gz", actors=16).write_parquet("s3://bucket/vectors/")

or, from the command line on `ray.init()`'s cluster (a local one when none is running),
`maelmo maelmo-ray-embed INPUT OUTPUT --model model.tar.gz` (docs/distributed.md). Every check of the rows,
the output and the model runs before Ray starts: the model is loaded once here and embeds the first row, so a
damaged archive or a layer it lacks is one line, not a failure in every actor.

Choices, and why:
* **One vector per sentence.** Parquet holds a fixed-length `vector` column (a list of float32), which every
  Parquet reader opens; Ray's tensor extension type is avoided, its files have not always read back across
  Ray versions (ray#28102). The vector is `MaskedElmo.embed(..., layer, pool="sentence")`'s: the mean over
  the sentence's word-pieces of one layer (`-1`, the top, by default) or of the scalar mix.
* **Two backends** (`SentenceVectors`). `model` is a `model.tar.gz` (or a serialization or Hugging Face export
  directory), run by torch; or the directory of `maelmo-export --format onnx`, run by ONNX Runtime
  (`maelmo_plugin/onnx/runner.py`; `onnx_file`: `model_int8.onnx` for int8 products, the fastest on CPUs),
  which loads no torch model.
* **Threads.** Ray sets `OMP_NUM_THREADS` to an actor's CPUs (1 by default), and torch and ONNX Runtime
  follow it; `threads` sets them explicitly, to the CPUs each actor is given (`num_cpus` in `ray_options`).
* **Ids, not order.** Ray Data does not keep row order (ray#40216): each output row carries its input's `id`,
  which must be unique.
* **Resume.** `embed_with_ray` turns on Ray Data's own job checkpointing (`CheckpointConfig`, keyed by `id`)
  where the installed Ray has it, so that a job run again after a failure skips the ids already written.
  Within a run, Ray restarts an actor that dies and retries its batch.
"""

import argparse
import logging
import os
import shutil
import sys
from collections.abc import Callable
from typing import Any, Optional, Protocol, Union

import numpy as np

from maelmo_declarations import owned_outputs
from maelmo_declarations.refusals import Refusal
from maelmo_plugin.embedding.output_size import check_output_size, measure_row_vectors
from maelmo_plugin.embedding.ray_rows import (
    ID,
    PARQUET,
    TEXT,
    check_rows,
    first_text,
    read_rows_kind,
    written_ids,
)
from maelmo_plugin.onnx.runner import OnnxSentenceVectors, check_onnx_directory

logger = logging.getLogger(__name__)

VECTOR = "vector"
COMMAND = (
    "maelmo-ray-embed"  # whose output a folder is, in its manifest (maelmo_declarations/owned_outputs.py)
)
# Reading rows and writing Parquet ask for no CPU: they are light beside the actors, which hold a CPU each, and a
# read task that waits for a CPU the actors hold would wait for ever (a fixed pool that fills the cluster).
IO_TASKS: dict[str, Any] = {"num_cpus": 0}


class SentenceVectors(Protocol):
    """What an actor's backend gives: `(len(texts), dim)` float32 sentence vectors of `layer`."""

    def embed(self, texts: list[str], layer: Union[int, str], batch_size: int) -> np.ndarray: ...


class SentenceEmbedder:
    """
    The callable class for `ray.data.Dataset.map_batches`: loads the model once (in each actor), then turns a
    batch of `id` and `text` into a table of `id` and `vector`.

    # Parameters

    model : `str`
        A `model.tar.gz` (or its serialization directory, or a Hugging Face export), run by torch; or the
        directory `maelmo-export --format onnx` wrote, run by ONNX Runtime.
    layer : `Union[int, str]`, optional (default = `-1`)
        The layer averaged over each sentence's word-pieces (0 = the embeddings, -1 = the top), or "mix",
        the scalar mix with equal weights.
    batch_size : `int`, optional (default = `64`)
        Sentences per forward pass; a Ray batch is cut into such passes by length.
    precision : `str`, optional (default = `"fp32"`)
        The torch backend's products (`MaskedElmo.embed`'s `precision`).
    onnx_file : `str`, optional (default = `"model.onnx"`)
        In an ONNX directory, the model to run (`model_int8.onnx` for int8).
    threads : `int`, optional (default = `None`)
        Threads of torch or ONNX Runtime in this actor; None keeps what the process has (Ray's
        `OMP_NUM_THREADS`, the actor's CPUs).
    """

    def __init__(
        self,
        model: str,
        layer: Union[int, str] = -1,
        batch_size: int = 64,
        precision: str = "fp32",
        onnx_file: str = "model.onnx",
        threads: Optional[int] = None,
    ) -> None:
        self._layer = layer
        self._batch_size = batch_size
        self._backend: SentenceVectors
        if os.path.isdir(model) and os.path.isfile(os.path.join(model, onnx_file)):
            self._backend = OnnxSentenceVectors(model, onnx_file, threads)
        else:
            self._backend = _TorchBackend(model, precision, threads)

    def __call__(self, batch: dict[str, Any]) -> Any:  # a pyarrow Table of id and vector
        import pyarrow

        for column in (ID, TEXT):
            if column not in batch:
                raise Refusal(
                    f"The rows need the columns {ID!r} and {TEXT!r}; this batch has {sorted(batch)}. Rename "
                    f"the columns (Dataset.rename_columns) or add ids (e.g. the line number)."
                )
        texts = [str(text) for text in batch[TEXT]]
        vectors = self._backend.embed(texts, self._layer, self._batch_size)
        dim = vectors.shape[1] if len(texts) else 0
        flat = pyarrow.array(vectors.reshape(-1).astype(np.float32), type=pyarrow.float32())
        # Ray Data takes a pyarrow table as a batch: a fixed-size list column, not its tensor extension type.
        return pyarrow.table(
            {ID: pyarrow.array(batch[ID]), VECTOR: pyarrow.FixedSizeListArray.from_arrays(flat, dim)}
        )


class _TorchBackend:
    def __init__(self, model: str, precision: str, threads: Optional[int]) -> None:
        import torch

        from maelmo_plugin.api import MaskedElmo

        if threads is not None:
            torch.set_num_threads(threads)
        self._elmo = MaskedElmo.from_archive(model)
        self._precision = precision

    def embed(self, texts: list[str], layer: Union[int, str], batch_size: int) -> np.ndarray:
        vectors = self._elmo.embed(
            texts, layer=layer, pool="sentence", batch_size=batch_size, precision=self._precision
        )
        return np.stack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)


def embed_dataset(
    dataset: Any,
    model: str,
    actors: int = 2,
    ray_batch_size: int = 256,
    ray_options: Optional[dict[str, Any]] = None,
    **embedder_options: Any,
) -> Any:
    """
    `dataset` (rows of `id` and `text`) mapped to rows of `id` and `vector` by `actors` actors of
    `SentenceEmbedder(model, **embedder_options)`, `ray_batch_size` rows at a time. `ray_options` go to each
    actor (`num_cpus`, `num_gpus`, `memory`...); the default is one CPU, and one thread, per actor.
    """
    import ray.data

    # An actor that dies (a node lost, the out-of-memory killer) is restarted and its batch retried: Ray Data's
    # default for an actor pool (max_restarts and max_task_retries -1).
    options = {"num_cpus": 1, **(ray_options or {})}
    embedder_options.setdefault("threads", max(1, int(options["num_cpus"])))
    return dataset.map_batches(
        SentenceEmbedder,
        fn_constructor_kwargs={"model": model, **embedder_options},
        batch_size=ray_batch_size,
        compute=ray.data.ActorPoolStrategy(size=actors),
        **options,
    )


def read_rows(path: str) -> Any:
    """A Dataset of `id` and `text`: JSON lines, or Parquet; one file or a directory of them."""
    import ray.data

    if read_rows_kind(path) == "parquet":
        return ray.data.read_parquet(path, columns=[ID, TEXT], **IO_TASKS)
    return ray.data.read_json(path, lines=True, **IO_TASKS)


def embed_with_ray(
    input_path: str,
    output_dir: str,
    model: str,
    actors: int = 2,
    force: bool = False,
    report: Callable[[str], None] = logger.info,
    **options: Any,
) -> None:
    """
    Reads `input_path` (`read_rows`), embeds it (`embed_dataset`) and writes Parquet files of `id` and `vector`
    into `output_dir`, on the Ray cluster `ray.init()` joins. With Ray Data's job checkpointing (keyed by `id`,
    in `output_dir/.checkpoint`, removed when the job succeeds), a job run again after a failure embeds only
    the ids not yet written. A finished `output_dir` is replaced only with `force`. Before Ray starts, the
    output's size is given to `report` (`output_size.RowVectorsSize`), and refused where the disk lacks it.
    """
    import ray
    from ray.data import SaveMode
    from ray.data.context import DataContext

    # Checked before Ray starts: a bad row would otherwise surface inside an actor, after the model loads.
    ids = check_rows(input_path)
    onnx_file = options.get("onnx_file", "model.onnx")
    if os.path.isfile(os.path.join(model, onnx_file)):
        check_onnx_directory(model, onnx_file)
    checkpoint = os.path.join(os.path.abspath(output_dir), ".checkpoint")
    # The rule of every writing command (maelmo_declarations/owned_outputs.py): a new or empty folder, this job's own
    # unfinished one (continued), or with --force a finished one; never a folder of the user's nor the input's.
    claimed = owned_outputs.check_output(
        output_dir, COMMAND, True, inputs=[input_path, model], option="The output folder"
    )
    finished = claimed is not None and (
        claimed.get("complete", True) or _finished(output_dir, checkpoint, ids)
    )
    if finished and not force:
        raise Refusal(
            f"{output_dir} holds the vectors of a finished job: give --force to embed {input_path} into it again "
            f"(only the files that job wrote are replaced), or a new folder."
        )
    if os.path.isdir(checkpoint) and not finished and read_rows_kind(input_path) == "json":
        # Ray Data's checkpoint filter fails on JSON-lines reads; Parquet input resumes.
        raise Refusal(
            f"{output_dir} holds an unfinished job ({checkpoint}), which Ray Data resumes from Parquet input "
            f"only: convert {input_path} to Parquet to resume, or move {output_dir} away to start afresh."
        )
    dim = check_model(model, input_path, options)
    written = sum(_listing(output_dir)["files"].values()) if claimed is not None and not finished else 0
    size = measure_row_vectors(ids, dim, output_dir, written)
    report(size.statement())
    check_output_size(size)
    ray.init(ignore_reinit_error=True, include_dashboard=False)
    per_actor = float((options.get("ray_options") or {}).get("num_cpus", 1))
    cpus = float(ray.cluster_resources().get("CPU", 0))
    if read_rows_kind(input_path) == "parquet" and actors * per_actor >= cpus:
        # Ray's Parquet reader runs a task that asks for a CPU whatever `num_cpus` says: with the actors
        # holding every CPU, it would wait for ever.
        raise Refusal(
            f"{actors} actors of {per_actor:g} CPU take every CPU of the Ray cluster ({cpus:g}), and Ray's Parquet "
            f"reader needs one of its own: give --actors {max(1, int((cpus - 1) // per_actor))} or fewer, or "
            f"JSON-lines input."
        )
    # Every check has passed: only now is the folder changed, so a refused start leaves nothing behind.
    if finished:
        # Only what this job's manifest lists, and its stale checkpoint, which would skip every id.
        assert claimed is not None
        listed = claimed if claimed.get("complete", True) else _listing(output_dir)
        owned_outputs.remove_listed(output_dir, listed)
        shutil.rmtree(checkpoint, ignore_errors=True)
    if claimed is None or finished:
        os.makedirs(output_dir, exist_ok=True)
        owned_outputs.write_manifest(output_dir, COMMAND, files=[], complete=False)
    try:
        from ray.data.checkpoint import CheckpointConfig

        DataContext.get_current().checkpoint_config = CheckpointConfig(
            id_column=ID, checkpoint_path=checkpoint
        )
    except ImportError:  # a Ray before job checkpointing: a failed job is run again whole
        logger.warning("This Ray has no ray.data.checkpoint: a job that fails starts over when run again.")
    # No dictionary for the vectors, whose float32 values never repeat: pyarrow's default one made each file
    # of 256 rows half as large again (output_size.RowVectorsSize).
    embed_dataset(read_rows(input_path), model, actors, **options).write_parquet(
        output_dir, ray_remote_args=IO_TASKS, mode=SaveMode.APPEND, use_dictionary=[ID]
    )
    owned_outputs.write_manifest(output_dir, COMMAND, files=_listing(output_dir)["files"])


def check_model(model: str, input_path: str, options: dict[str, Any]) -> int:
    """
    The model loaded here, once, and run on the input's first row, before Ray starts: a damaged or code-running
    archive, a layer it lacks or a text it cannot read is one line naming it, not a failure in every actor
    (each would load it, fail, and be restarted). The actors load it again, each once. Returns the vector's size.
    """
    settings = {
        key: options[key] for key in ("layer", "batch_size", "precision", "onnx_file") if key in options
    }
    first = SentenceEmbedder(model, **settings)({ID: [0], TEXT: [first_text(input_path)]})
    return int(first.column(VECTOR).type.list_size)


def _listing(output_dir: str) -> dict[str, Any]:
    """The manifest of what this job wrote into its own folder: its Parquet files (the folder is claimed empty)."""
    files = {name: os.path.getsize(os.path.join(output_dir, name)) for name in os.listdir(output_dir)}
    return {"files": {name: size for name, size in files.items() if name.endswith(PARQUET)}}


def _finished(output_dir: str, checkpoint: str, ids: Any) -> bool:
    """
    Whether this job's unfinished folder holds the vectors of every id in `ids` (a job stopped after Ray wrote
    them, before its manifest was completed). A `.checkpoint` alone does not make a job unfinished: one left
    from an earlier run would have a rerun append every id again.
    """
    import pyarrow.compute

    written = written_ids(output_dir)
    if written is None:
        return False
    if not os.path.isdir(checkpoint):
        return True  # Ray removes the checkpoint when a job succeeds
    return bool(pyarrow.compute.all(pyarrow.compute.is_in(ids, value_set=written.combine_chunks())).as_py())


def run(args: argparse.Namespace) -> None:
    """The job of `maelmo maelmo-ray-embed` (declared in `maelmo_declarations/commands/ray_embed.py`)."""
    try:
        embed_with_ray(
            args.input,
            args.output,
            args.model,
            args.actors,
            force=args.force,
            report=lambda statement: print(statement, file=sys.stderr),
            layer=args.layer,
            onnx_file=args.onnx_file,
            ray_options={"num_cpus": args.cpus_per_actor},
        )
    except KeyboardInterrupt:
        print("Interrupted: run the same command again to continue the job.", file=sys.stderr)
        sys.exit(130)
    print(f"Wrote the vectors of {args.input} to {args.output}")


def main(argv: Optional[list[str]] = None) -> None:
    """`python -m maelmo_plugin.embedding.ray_data ...`: the same command as `maelmo maelmo-ray-embed ...`."""
    from maelmo_declarations.commands.ray_embed import COMMAND as RAY_EMBED
    from maelmo_declarations.parser import command_parser
    from maelmo_plugin.commands.subcommands import run as run_command

    parser, subparser = command_parser(RAY_EMBED, prog="python -m maelmo_plugin.embedding.ray_data")
    run_command(
        RAY_EMBED, subparser, parser.parse_args([RAY_EMBED.name, *(sys.argv[1:] if argv is None else argv)])
    )


if __name__ == "__main__":
    main()
