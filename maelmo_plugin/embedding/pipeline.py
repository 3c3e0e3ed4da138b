"""
The bulk-embedding pipeline behind `allennlp maelmo-embed`: the lines of a text file, read in windows, sorted
by length, cut into batches that are the same in every run, embedded (here, or by worker processes:
`workers.py`) and written to the job's partial directory (`job.py`), then merged into one HDF5 file in the
layout of AllenNLP 1.x's `allennlp elmo`.

One embedding job, in two phases: `plan_embedding`, every check that needs no model, each once, and
`run_embedding`, with the model: the command (`maelmo_plugin/commands/embed.py`) plans, then loads the model
and runs; the Python API (`MaskedElmo.embed_file`) and the benchmarks call `embed_file`, both phases with a
loaded predictor. Shards (`maelmo_files/embedding/shards.py`) run it on their part of the lines.
"""

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

import h5py
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.common.tqdm import Tqdm
from allennlp.common.util import lazy_groups_of

from maelmo_declarations import owned_outputs
from maelmo_declarations.options import STORAGES
from maelmo_declarations.refusals import (
    Refusal,
    check_batch_size,
    check_cuda_device_id,
    check_input_file,
    check_processes,
)
from maelmo_declarations.shards import Shard
from maelmo_files.common.text_files import read_lines
from maelmo_files.embedding.shards import SHARD_ATTRIBUTE, content_sha256
from maelmo_plugin.embedding.fingerprint import job_fingerprint, weights_fingerprint
from maelmo_plugin.embedding.job import COMMAND, EmbeddingJob
from maelmo_plugin.embedding.output_size import check_output_size, measure_output
from maelmo_plugin.embedding.workers import BatchEmbedder, InProcess, Workers
from maelmo_plugin.lm.predictors.representations import RepresentationsPredictor

logger = logging.getLogger(__name__)

# How many batches' lines are read and sorted by length at a time: batches of sentences of about the same
# length (little padding), while memory holds the word-pieces of this many lines only, not the file's.
SORTED_BATCHES = 32


@dataclass(frozen=True)
class EmbeddingPlan:
    """
    What an embedding job will do, every check that needs no model passed (`plan_embedding`): the first of the
    job's two phases. `run_embedding` is the second, with the model.
    """

    input_file: str
    output_file: str
    batch_size: int
    processes: int
    shard: Optional[Shard]
    settings: dict[str, Any]  # the predictor's: layer, scalar_mix_parameters, pool, precision
    on_gpu: bool
    force: bool
    num_lines: int
    storage: str = "float32"  # the vectors' type in the file (output_size.py)

    @property
    def window_size(self) -> int:
        return self.batch_size * SORTED_BATCHES

    @property
    def lines_range(self) -> range:
        """The lines (0-based) this job embeds: all of them, or its shard's."""
        return (self.shard or Shard(0, 1)).lines(self.num_lines, self.window_size)


def plan_embedding(
    input_file: str,
    output_file: str,
    settings: dict[str, Any],
    batch_size: int = 64,
    force: bool = False,
    processes: int = 1,
    shard: Optional[Shard] = None,
    cuda_device: int = -1,
    storage: str = "float32",
) -> EmbeddingPlan:
    """
    Every check of an embedding job that needs no model, each once, in one line naming the fault: the batch size,
    the processes, the device, the input file and each of its lines, and what the output may replace
    (`owned_outputs.py`). `settings` are the predictor's (layer, mix, pool, precision), `cuda_device` its device,
    `storage` the vectors' type in the file.
    """
    if storage not in STORAGES:
        raise Refusal(f"storage (--storage) is {storage!r}: give one of {', '.join(STORAGES)}.")
    check_batch_size(batch_size)
    check_processes(processes, cuda_device >= 0)
    check_cuda_device(cuda_device)
    check_input_file(input_file)  # first: an output inside an input folder would name the folder
    owned_outputs.check_file_output(output_file, COMMAND, force, [input_file], example="vectors.hdf5")
    num_lines = check_lines(input_file)
    return EmbeddingPlan(
        input_file,
        output_file,
        batch_size,
        processes,
        shard,
        dict(settings),
        cuda_device >= 0,
        force,
        num_lines,
        storage,
    )


def run_embedding(
    plan: EmbeddingPlan,
    load: Callable[[], RepresentationsPredictor],
    report: Callable[[str], None] = logger.info,
) -> int:
    """
    Embeds what `plan` says, with the predictor `load` gives, and returns the number of sentences embedded:
    the one job behind `maelmo-embed`, `MaskedElmo.embed_file` and the benchmarks.

    The output is written aside, in `OUTPUT.partial/`, and moved into place when complete; an existing output
    stays as it was until the new one is complete. An unfinished run of other options is refused (or with
    `force` discarded) before `load` is called; one of the same input, model and options continues, from Python
    or from the command line alike (the model is identified by its weights: `job.py`). Before any vector is
    computed, the output's size is counted and given to `report`, and a disk that cannot hold it is refused
    (`output_size.py`). See `embed_into`.
    """
    options = embedding_options(plan.settings, plan.batch_size, plan.on_gpu, plan.shard, plan.storage)
    job = EmbeddingJob.start(plan.output_file, job_fingerprint(plan.input_file, None, options), plan.force)
    try:
        predictor = load()
        # "auto" is resolved by the predictor, once it knows the model and the device.
        resolved = (
            {**plan.settings, "precision": predictor.precision}
            if plan.settings["precision"] == "auto"
            else plan.settings
        )
        if predictor.settings != resolved:
            raise RuntimeError(
                f"The predictor loaded has the settings {predictor.settings}, the plan {resolved}."
            )
        job.set_model(weights_fingerprint(predictor._model), plan.force)
        size = measure_output(
            predictor,
            plan.input_file,
            plan.lines_range,
            plan.storage,
            plan.window_size,
            plan.output_file,
            job.written_bytes,
        )
        report(size.statement())
        check_output_size(size)
    except BaseException:
        job.stop()  # a model that does not load leaves no partial behind, unless one had sentences
        raise
    return embed_into(
        predictor, plan.input_file, job, plan.batch_size, plan.num_lines, plan.processes, plan.shard
    )


def embed_file(
    predictor: RepresentationsPredictor,
    input_file: str,
    output_file: str,
    batch_size: int = 64,
    force: bool = False,
    processes: int = 1,
    shard: Optional[Shard] = None,
    storage: str = "float32",
) -> int:
    """
    Embeds every line of `input_file` (or, with `shard`, its part of them: `maelmo_files/embedding/shards.py`)
    into `output_file` (HDF5) with a loaded `predictor`, and returns the number of sentences embedded:
    `plan_embedding`, then `run_embedding`. With `processes` > 1, that many forked worker processes embed the
    batches, each with one torch thread (`workers.py`). `storage` is the vectors' type in the file ("float32"
    or "float16").
    """
    parameter = next(predictor._model.parameters())
    cuda_device = parameter.device.index if parameter.is_cuda else -1
    plan = plan_embedding(
        input_file, output_file, predictor.settings, batch_size, force, processes, shard, cuda_device, storage
    )
    return run_embedding(plan, lambda: predictor)


def embed_into(
    predictor: RepresentationsPredictor,
    input_file: str,
    job: EmbeddingJob,
    batch_size: int,
    num_lines: int,
    processes: int = 1,
    shard: Optional[Shard] = None,
) -> int:
    """
    Embeds the `num_lines` lines of `input_file` (checked by `check_lines`), or `shard`'s part of them, into
    `job`'s output; returns the number of sentences embedded.

    Streams: it reads `SORTED_BATCHES` batches of lines at a time (a window), embeds them `batch_size` at a
    time in order of length (the predictor's `length_batches`: little padding computed), and writes each
    batch to the partial directory before the next, so only one batch of vectors is ever in memory. The
    batches depend on the input and the batch size only, so a resumed run computes exactly the batches it
    lacks, and its vectors equal an uninterrupted run's bit for bit. Datasets are named by line. As in
    `allennlp elmo`, a repeated sentence maps to its last index in `sentence_to_index`. A bad line (no
    word-piece, a special token) removes the partial: the input must change, so it could not be continued.
    Neither is a partial kept that holds no sentence. With `processes` > 1, worker processes embed and write
    the batches (`workers.py`), while this one reads and tokenizes the next ones.
    """
    window_size = batch_size * SORTED_BATCHES
    part = shard or Shard(0, 1)
    windows, lines_range = part.windows(-(-num_lines // window_size)), part.lines(num_lines, window_size)
    embedder: Optional[BatchEmbedder] = None
    try:
        embedder = Workers(predictor, job, processes) if processes > 1 else InProcess(predictor, job)
        with (
            read_lines(input_file, ConfigurationError) as lines,
            Tqdm.tqdm(
                total=len(lines_range), initial=job.num_written, desc="embedding", unit=" sentences"
            ) as progress,
        ):
            numbered = ((number - 1, line) for number, line in lines)  # datasets count from 0
            for window_number, window in enumerate(lazy_groups_of(numbered, window_size)):
                if window_number >= windows.stop:
                    break
                names = [
                    job.batch_name(window_number, batch) for batch in range(-(-len(window) // batch_size))
                ]
                if window_number < windows.start or all(name in job.completed for name in names):
                    continue
                sentences = [line.strip() for _, line in window]
                where = [f"line {index + 1} of {input_file}" for index, _ in window]
                instances = predictor.sentence_instances(sentences, where)
                for name, numbers in zip(names, predictor.length_batches(instances, batch_size)):
                    if name not in job.completed:
                        batch = [(window[number][0], instances[number]) for number in numbers]
                        progress.update(sum(embedder.submit((name, batch))))
            progress.update(sum(embedder.drain()))
        embedder.close(completed=True)

        def shard_record(output: h5py.File) -> dict[str, str]:
            assert shard is not None
            sha256 = content_sha256(output, lines_range)
            return {SHARD_ATTRIBUTE: shard.record(num_lines, window_size, job.fingerprint, sha256)}

        job.finish(sentence_to_index_of(input_file, lines_range), None if shard is None else shard_record)
    except (ConfigurationError, ValueError):
        if embedder is not None:
            embedder.close(completed=False)
        job.discard()
        raise
    except BaseException:
        if embedder is not None:
            embedder.close(completed=False)
        job.stop()
        raise
    logger.info("Embedded %d sentences of %s into %s", len(lines_range), input_file, job.output_file)
    return len(lines_range)


def sentence_to_index_of(input_file: str, lines_range: Optional[range] = None) -> dict[str, str]:
    """{sentence: its dataset's name} over the input's lines, or those of `lines_range` (0-based)."""
    sentence_to_index = {}
    with read_lines(input_file, ConfigurationError) as lines:
        for number, line in lines:  # in input order: the last one wins
            if lines_range is None or number - 1 in lines_range:
                sentence_to_index[line.strip()] = str(number - 1)
    return sentence_to_index


def embedding_options(
    settings: dict[str, Any],
    batch_size: int,
    on_gpu: bool,
    shard: Optional[Shard] = None,
    storage: str = "float32",
) -> dict[str, Any]:
    """
    What decides the vectors besides the input and the model: the predictor's `settings` (layer, mix, pool,
    precision), and the batches, which decide the padding (and int8's scales); which part is embedded, and
    the type the vectors are stored in.
    """
    options = {
        **settings,
        "batch_size": batch_size,
        "window": batch_size * SORTED_BATCHES,
        "device": "cuda" if on_gpu else "cpu",
    }
    if shard is not None:  # only then: an unsharded run's fingerprint is what it always was
        options["shard"] = str(shard)
    if storage != "float32":  # likewise: a float32 run's fingerprint is what it always was
        options["storage"] = storage
    return options


def check_cuda_device(cuda_device: int) -> None:
    """`--cuda-device`: -1 (the CPU) or a GPU this process sees; refused before the model loads."""
    check_cuda_device_id(cuda_device)
    if cuda_device >= 0:
        visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if cuda_device >= visible:
            raise Refusal(
                f"--cuda-device {cuda_device}: this process sees {visible} CUDA GPU{'s' if visible != 1 else ''} "
                f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}): give a GPU id below "
                f"{visible}, or -1 for the CPU."
            )


def check_lines(input_file: str) -> int:
    check_input_file(input_file)
    count = 0
    with read_lines(input_file, ConfigurationError) as lines:  # a line not UTF-8 is refused, naming it
        for count, text in lines:
            name = f"line {count} of {input_file}"
            if not text.strip():
                raise Refusal(
                    f"{name} is empty: the input has one sentence per line and each dataset is named by its "
                    f"line index, so remove blank lines first (e.g. `sed '/^[[:space:]]*$/d'`)."
                )
    if count == 0:
        raise Refusal(f"{input_file} has no lines: give one sentence per line.")
    return count
