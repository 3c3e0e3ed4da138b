"""
The bulk-embedding pipeline behind `allennlp maelmo-embed`: the lines of a text file, read in windows, sorted
by length, cut into batches that are the same in every run, embedded (here, or by worker processes:
`workers.py`) and written to the job's partial directory (`job.py`), then merged into one HDF5 file in the
layout of AllenNLP 1.x's `allennlp elmo`.

The command (`maelmo_plugin/commands/embed.py`), the Python API (`MaskedElmo.embed_file`) and the benchmarks
call `embed_file`, the one embedding job; shards (`shards.py`) run it on their part of the lines.
"""

import logging
import os
from collections.abc import Callable
from typing import Any, Optional, Union

import h5py
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.common.tqdm import Tqdm
from allennlp.common.util import lazy_groups_of

from maelmo_declarations import owned_outputs
from maelmo_declarations.refusals import (
    Refusal,
    check_batch_size,
    check_cuda_device_id,
    check_input_file,
    check_processes,
)
from maelmo_declarations.shards import Shard
from maelmo_plugin.common.text_files import read_lines
from maelmo_plugin.embedding.fingerprint import job_fingerprint, weights_fingerprint
from maelmo_plugin.embedding.job import COMMAND, EmbeddingJob
from maelmo_plugin.embedding.shards import SHARD_ATTRIBUTE, content_sha256
from maelmo_plugin.embedding.workers import BatchEmbedder, InProcess, Workers
from maelmo_plugin.lm.predictors.representations import RepresentationsPredictor

logger = logging.getLogger(__name__)

# How many batches' lines are read and sorted by length at a time: batches of sentences of about the same
# length (little padding), while memory holds the word-pieces of this many lines only, not the file's.
SORTED_BATCHES = 32


def embed_file(
    predictor: Union[RepresentationsPredictor, Callable[[], RepresentationsPredictor]],
    input_file: str,
    output_file: str,
    batch_size: int = 64,
    force: bool = False,
    processes: int = 1,
    shard: Optional[Shard] = None,
    settings: Optional[dict[str, Any]] = None,
    cuda_device: Optional[int] = None,
) -> int:
    """
    Embeds every line of `input_file` (or, with `shard`, its part of them: `shards.py`) into `output_file`
    (HDF5) and returns the number of sentences embedded: the one job behind `maelmo-embed`,
    `MaskedElmo.embed_file` and the benchmarks.

    `predictor` is a `RepresentationsPredictor`, or a function that loads one: the command's, so that every
    check that needs no model (batch size, device, processes, output path, input lines, an unfinished run of
    other options) answers before the model loads; `settings` (the predictor's: layer, mix, pool, precision)
    and `cuda_device` then say what it will be.

    The output is written aside, in `OUTPUT.partial/`, and moved into place when complete; an existing
    `output_file` is refused unless `force`, and stays as it was until the new one is complete. A run that
    stopped (an error, Ctrl-C, `kill -9`) continues when called again with the same input, model and options,
    from Python or from the command line alike (the model is identified by its weights); a partial of other
    ones is refused unless `force` (`job.py`). With `processes` > 1, that many forked worker processes embed
    the batches, each with one torch thread (`workers.py`). See `embed_into` for the rest.
    """
    loaded = predictor if isinstance(predictor, RepresentationsPredictor) else None
    if loaded is not None:
        settings, on_gpu = loaded.settings, next(loaded._model.parameters()).is_cuda
    elif settings is None or cuda_device is None:
        raise TypeError(
            "embed_file needs settings and cuda_device when given a function that loads the predictor"
        )
    else:
        on_gpu = cuda_device >= 0
    check_batch_size(batch_size)
    check_processes(processes, on_gpu)
    if cuda_device is not None:
        check_cuda_device(cuda_device)
    check_input_file(input_file)  # first: an output inside an input folder would name the folder
    owned_outputs.check_file_output(output_file, COMMAND, force, [input_file], example="vectors.hdf5")
    num_lines = check_lines(input_file)
    options = embedding_options(settings, batch_size, on_gpu, shard)
    job = EmbeddingJob.start(output_file, job_fingerprint(input_file, None, options), force)
    try:
        if loaded is None:
            if processes > 1:
                torch.set_num_threads(1)  # the workers compute; the parent forks them with no thread pool
            loaded = predictor()  # type: ignore[operator]  # why: mypy does not narrow the Union here
            # "auto" is resolved by the predictor, once it knows the model and the device.
            described = (
                {**settings, "precision": loaded.precision} if settings["precision"] == "auto" else settings
            )
            assert loaded.settings == described, "the loaded predictor is not the one the settings describe"
        job.set_model(weights_fingerprint(loaded._model), force)
    except BaseException:
        job.stop()  # a model that does not load leaves no partial behind, unless one had sentences
        raise
    return embed_into(loaded, input_file, job, batch_size, num_lines, processes, shard)


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
            read_lines(input_file) as lines,
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
    with read_lines(input_file) as lines:
        for number, line in lines:  # in input order: the last one wins
            if lines_range is None or number - 1 in lines_range:
                sentence_to_index[line.strip()] = str(number - 1)
    return sentence_to_index


def embedding_options(
    settings: dict[str, Any], batch_size: int, on_gpu: bool, shard: Optional[Shard] = None
) -> dict[str, Any]:
    """
    What decides the vectors besides the input and the model: the predictor's `settings` (layer, mix, pool,
    precision), and the batches, which decide the padding (and int8's scales); and which part is embedded.
    """
    options = {
        **settings,
        "batch_size": batch_size,
        "window": batch_size * SORTED_BATCHES,
        "device": "cuda" if on_gpu else "cpu",
    }
    if shard is not None:  # only then: an unsharded run's fingerprint is what it always was
        options["shard"] = str(shard)
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
    with read_lines(input_file) as lines:  # a line that is not UTF-8 is a ConfigurationError naming it
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
