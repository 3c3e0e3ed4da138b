"""
The `maelmo-embed` subcommand: writes the vectors of every sentence of a text file to HDF5, in the layout
of AllenNLP 1.x's `allennlp elmo` command.

    allennlp maelmo-embed ARCHIVE INPUT.txt OUTPUT.hdf5 [--batch-size 64] [--cuda-device -1]
                          [--layer N|mix] [--pool first|mean|sentence] [--precision fp32|int8|bf16|auto]
                          [--processes N] [--force]

INPUT has one sentence per line, in UTF-8; it may be gzip, bzip2 or xz. OUTPUT holds one dataset per line,
named by its 0-based line index, of shape (L + 1, num_tokens, dim) (or (num_tokens, dim) with `--layer`),
and a dataset `sentence_to_index` whose one string is the JSON mapping {sentence: index}. The tokens are
the word-pieces, [CLS] and [SEP] included, or with `--pool first|mean` the words (see the
`maelmo_representations` predictor); each dataset's `tokens` attribute lists them. With `--pool sentence`
each line has one vector, the mean over its word-pieces: shape (L + 1, dim), or (dim,) with `--layer`
(`tokens` lists the word-pieces averaged).
`--precision` is the predictor's `precision`: int8 or bfloat16 products on a CPU, for speed (their
error and speed: docs/performance.md). The file is in the HDF5 1.8 format, whose attributes have no size
limit, so a line of any length keeps its `tokens`.

OUTPUT appears only when complete: the batches are written to `OUTPUT.partial/` and a stopped run (error,
Ctrl-C, `kill -9`) continues from there when the same command is run again, to the vectors an uninterrupted
run gives, bit for bit (`embed_job.py`). An existing OUTPUT is replaced only with `--force`. The output path,
the input and an unfinished run are checked before the model loads.

`--processes N` embeds with N worker processes, one batch each at a time, on the CPU (`embed_batches.py`):
the same file as `--processes 1`, bit for bit, and a run stopped with one N continues with another.
"""

import argparse
import logging
import os
import sys
from typing import Any, Optional, Union

import torch
from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError
from allennlp.common.tqdm import Tqdm
from allennlp.common.util import lazy_groups_of
from allennlp.predictors import Predictor

from maelmo_plugin.commands.embed_batches import InProcess, Workers, WorkerStopped, check_processes
from maelmo_plugin.commands.embed_job import (
    EmbeddingJob,
    job_fingerprint,
    model_fingerprint,
    weights_fingerprint,
)
from maelmo_plugin.common.partial_output import check_output_path
from maelmo_plugin.common.text_files import read_lines
from maelmo_plugin.lm.loading import load_language_model_archive
from maelmo_plugin.lm.modules.reduced_precision import PRECISIONS
from maelmo_plugin.lm.predictors.representations import POOLING, RepresentationsPredictor

logger = logging.getLogger(__name__)

# How many batches' lines are read and sorted by length at a time: batches of sentences of about the same
# length (little padding), while memory holds the word-pieces of this many lines only, not the file's.
SORTED_BATCHES = 32


@Subcommand.register("maelmo-embed")
class Embed(Subcommand):
    """
    Registered as a `Subcommand` with name "maelmo-embed".

    Embeds a file of sentences with a Masked ELMo or ELMo-LM archive into HDF5 (see `embed_file`).
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = "Write the Masked ELMo vectors of a file of sentences (one per line) to HDF5."
        subparser = parser.add_parser(self.name, description=description, help=description)
        subparser.add_argument(
            "archive_file",
            help="a model.tar.gz of maelmo_masked_elmo_lm or maelmo_elmo_lm, or a maelmo-export directory",
        )
        subparser.add_argument(
            "input_file", help="a UTF-8 text file, one sentence per line (plain, or gzip, bzip2 or xz)"
        )
        subparser.add_argument(
            "output_file", help="the HDF5 file to write (an existing one only with --force)"
        )
        subparser.add_argument("--batch-size", type=int, default=64, help="sentences per batch")
        subparser.add_argument("--cuda-device", type=int, default=-1, help="GPU id, or -1 for the CPU")
        subparser.add_argument(
            "--layer",
            type=_layer,
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
            "--processes",
            type=int,
            default=1,
            help="worker processes, each embedding one batch at a time with one torch thread, to use several "
            "CPU cores (default 1: this process, with torch's threads)",
        )
        subparser.add_argument(
            "--force",
            action="store_true",
            help="replace an existing OUTPUT (left as it is until the new one is complete), and discard an "
            "unfinished run of other settings",
        )

        def run(args: argparse.Namespace) -> None:
            # A user error (a bad output path, input line or archive) gets argparse's one-line message, not a
            # traceback; the output path, the input and an unfinished run are checked before the model loads.
            job = None
            try:
                if args.batch_size < 1:
                    raise ValueError(f"--batch-size must be at least 1, got {args.batch_size}.")
                check_processes(args.processes, args.cuda_device >= 0)
                check_output_path(
                    args.output_file, args.force, example="vectors.hdf5"
                )  # before reading the input
                num_lines = _check_lines(args.input_file)
                options = _options(
                    args.layer, None, args.pool, args.precision, args.batch_size, args.cuda_device
                )
                fingerprint = job_fingerprint(args.input_file, model_fingerprint(args.archive_file), options)
                job = EmbeddingJob.start(args.output_file, fingerprint, args.force)
                if args.processes > 1:
                    torch.set_num_threads(1)  # the workers compute; the parent forks them with no thread pool
                archive = load_language_model_archive(args.archive_file, cuda_device=args.cuda_device)
                predictor = Predictor.from_archive(
                    archive,
                    "maelmo_representations",
                    extra_args={"layer": args.layer, "pool": args.pool, "precision": args.precision},
                )
                assert isinstance(predictor, RepresentationsPredictor)
                count = embed_into(
                    predictor, args.input_file, job, args.batch_size, num_lines, args.processes
                )
            except (ConfigurationError, ValueError, FileNotFoundError) as error:
                subparser.error(str(error))
            except (KeyboardInterrupt, WorkerStopped) as stop:
                written = job.num_written if job is not None else 0
                where = job.directory if job is not None else args.output_file + ".partial"
                print(
                    f"{'Interrupted' if isinstance(stop, KeyboardInterrupt) else stop}: the vectors of {written} "
                    f"sentences are kept in {where}; run the same command again to continue from there.",
                    file=sys.stderr,
                )
                sys.exit(130 if isinstance(stop, KeyboardInterrupt) else 1)
            print(f"Wrote the vectors of {count} sentences to {args.output_file}")

        subparser.set_defaults(func=run)
        return subparser


def embed_file(
    predictor: RepresentationsPredictor,
    input_file: str,
    output_file: str,
    batch_size: int = 64,
    force: bool = False,
    processes: int = 1,
) -> int:
    """
    Embeds every line of `input_file` into `output_file` (HDF5) and returns the number of sentences.

    The output is written aside, in `OUTPUT.partial/`, and moved into place when complete; an existing
    `output_file` is refused unless `force`, and stays as it was until the new one is complete. A run that
    stopped (an error, Ctrl-C, `kill -9`) continues when called again with the same input, model and options
    (the model is identified by its weights); a partial of other ones is refused unless `force`
    (`embed_job.py`). With `processes` > 1, that many forked worker processes embed the batches, each with
    one torch thread (`embed_batches.py`). See `embed_into` for the rest.
    """
    if batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, got {batch_size}.")
    parameter = next(predictor._model.parameters())
    check_processes(processes, parameter.is_cuda)
    check_output_path(output_file, force, example="vectors.hdf5")
    num_lines = _check_lines(input_file)
    options = _options(
        predictor._layer,
        predictor._mix_parameters,
        predictor._pool,
        predictor.precision,
        batch_size,
        0 if parameter.is_cuda else -1,
    )
    fingerprint = job_fingerprint(input_file, weights_fingerprint(predictor._model), options)
    job = EmbeddingJob.start(output_file, fingerprint, force)
    return embed_into(predictor, input_file, job, batch_size, num_lines, processes)


def embed_into(
    predictor: RepresentationsPredictor,
    input_file: str,
    job: EmbeddingJob,
    batch_size: int,
    num_lines: int,
    processes: int = 1,
) -> int:
    """
    Embeds the `num_lines` lines of `input_file` (checked by `_check_lines`) into `job`'s output.

    Streams: it reads `SORTED_BATCHES` batches of lines at a time (a window), embeds them `batch_size` at a
    time in order of length (the predictor's `length_batches`: little padding computed), and writes each
    batch to the partial directory before the next, so only one batch of vectors is ever in memory. The
    batches depend on the input and the batch size only, so a resumed run computes exactly the batches it
    lacks, and its vectors equal an uninterrupted run's bit for bit. Datasets are named by line. As in
    `allennlp elmo`, a repeated sentence maps to its last index in `sentence_to_index`. A bad line (no
    word-piece, a special token) removes the partial: the input must change, so it could not be continued.
    With `processes` > 1, worker processes embed and write the batches (`embed_batches.py`), while this
    one reads and tokenizes the next ones.
    """
    window_size = batch_size * SORTED_BATCHES
    embedder = None
    try:
        embedder = Workers(predictor, job, processes) if processes > 1 else InProcess(predictor, job)
        with (
            read_lines(input_file) as lines,
            Tqdm.tqdm(
                total=num_lines, initial=job.num_written, desc="embedding", unit=" sentences"
            ) as progress,
        ):
            numbered = ((number - 1, line) for number, line in lines)  # datasets count from 0
            for window_number, window in enumerate(lazy_groups_of(numbered, window_size)):
                names = [
                    job.batch_name(window_number, batch) for batch in range(-(-len(window) // batch_size))
                ]
                if all(name in job.completed for name in names):
                    continue
                sentences = [line.strip() for _, line in window]
                where = [f"line {index + 1} of {input_file}" for index, _ in window]
                instances = predictor.sentence_instances(sentences, where)
                for name, numbers in zip(names, predictor.length_batches(instances, batch_size)):
                    if name not in job.completed:
                        batch = [(window[number][0], instances[number]) for number in numbers]
                        for count in embedder.submit((name, batch)):
                            progress.update(count)
            for count in embedder.drain():
                progress.update(count)
        embedder.close(completed=True)
        job.finish(_sentence_to_index(input_file))
    except (ConfigurationError, ValueError):
        if embedder is not None:
            embedder.close(completed=False)
        job.discard()
        raise
    except BaseException:
        if embedder is not None:
            embedder.close(completed=False)
        job.release()
        raise
    logger.info("Embedded %d sentences of %s into %s", num_lines, input_file, job.output_file)
    return num_lines


def _sentence_to_index(input_file: str) -> dict[str, str]:
    sentence_to_index = {}
    with read_lines(input_file) as lines:
        for number, line in lines:  # in input order: the last one wins
            sentence_to_index[line.strip()] = str(number - 1)
    return sentence_to_index


def _options(
    layer: Optional[Union[int, str]],
    mix_parameters: Optional[list[float]],
    pool: Optional[str],
    precision: str,
    batch_size: int,
    cuda_device: int,
) -> dict[str, Any]:
    """What decides the vectors besides the input and the model: the batches decide the padding (and int8's scales)."""
    return {
        "layer": layer,
        "scalar_mix_parameters": mix_parameters,
        "pool": pool,
        "precision": precision,
        "batch_size": batch_size,
        "window": batch_size * SORTED_BATCHES,
        "device": "cuda" if cuda_device >= 0 else "cpu",
    }


def _check_lines(input_file: str) -> int:
    if not os.path.isfile(input_file):
        raise FileNotFoundError(f"No such input file: {input_file!r}.")
    count = 0
    with read_lines(input_file) as lines:  # a line that is not UTF-8 is a ConfigurationError naming it
        for count, text in lines:
            name = f"line {count} of {input_file}"
            if not text.strip():
                raise ValueError(
                    f"{name} is empty: the input has one sentence per line and each dataset is named by its "
                    f"line index, so remove blank lines first (e.g. `sed '/^[[:space:]]*$/d'`)."
                )
    if count == 0:
        raise ValueError(f"{input_file} has no lines: give one sentence per line.")
    return count


def _layer(value: str) -> Optional[Union[int, str]]:
    if value == "mix":
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"an integer or 'mix', got {value!r}") from None
