"""
The `maelmo-embed` subcommand: writes the vectors of every sentence of a text file to HDF5, in the layout
of AllenNLP 1.x's `allennlp elmo` command.

    allennlp maelmo-embed ARCHIVE INPUT.txt OUTPUT.hdf5 [--batch-size 64] [--cuda-device -1]
                          [--layer N|mix] [--pool first|mean|sentence] [--precision fp32|int8|bf16|auto]

INPUT has one sentence per line, in UTF-8; it may be gzip, bzip2 or xz. OUTPUT holds one dataset per line,
named by its 0-based line index, of shape (L + 1, num_tokens, dim) (or (num_tokens, dim) with `--layer`),
and a dataset `sentence_to_index` whose one string is the JSON mapping {sentence: index}. The tokens are
the word-pieces, [CLS] and [SEP] included, or with `--pool first|mean` the words (see the
`maelmo_representations` predictor); each dataset's `tokens` attribute lists them. With `--pool sentence`
each line has one vector, the mean over its word-pieces: shape (L + 1, dim), or (dim,) with `--layer`
(`tokens` lists the word-pieces averaged).
`--precision` is the predictor's `precision`: int8 or bfloat16 products on a CPU, for speed (their
error and speed: docs/performance.md).
"""

import argparse
import json
import logging
import os
from typing import Optional, Union

import h5py
from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError
from allennlp.common.tqdm import Tqdm
from allennlp.common.util import lazy_groups_of
from allennlp.predictors import Predictor

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
        subparser.add_argument("output_file", help="the HDF5 file to write (overwritten)")
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

        def run(args: argparse.Namespace) -> None:
            # A user error (bad input line, wrong archive) gets argparse's one-line message, not a traceback.
            try:
                archive = load_language_model_archive(args.archive_file, cuda_device=args.cuda_device)
                predictor = Predictor.from_archive(
                    archive,
                    "maelmo_representations",
                    extra_args={"layer": args.layer, "pool": args.pool, "precision": args.precision},
                )
                assert isinstance(predictor, RepresentationsPredictor)
                count = embed_file(predictor, args.input_file, args.output_file, args.batch_size)
            except (ConfigurationError, ValueError, FileNotFoundError) as error:
                subparser.error(str(error))
            print(f"Wrote the vectors of {count} sentences to {args.output_file}")

        subparser.set_defaults(func=run)
        return subparser


def embed_file(
    predictor: RepresentationsPredictor, input_file: str, output_file: str, batch_size: int = 64
) -> int:
    """
    Embeds every line of `input_file` into `output_file` and returns the number of sentences.

    Streams: a first pass checks the lines (an empty or non-UTF-8 line is an error naming it, before
    anything is written) and counts them for the progress bar; the second reads `SORTED_BATCHES` batches
    of lines at a time, embeds them `batch_size` at a time in order of length (the predictor's
    `batched_vectors`: little padding computed), and writes each batch's vectors before the next, so only
    one batch of vectors is ever in memory. Datasets are named by line, whatever the order they are written
    in. As in `allennlp elmo`, a repeated sentence maps to its last index in `sentence_to_index`. On error,
    the partly written output is removed.
    """
    if batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, got {batch_size}.")
    num_lines = _check_lines(input_file)
    sentence_to_index = {}
    try:
        with h5py.File(output_file, "w") as output, read_lines(input_file) as lines:
            with Tqdm.tqdm(total=num_lines, desc="embedding", unit=" sentences") as progress:
                numbered = ((number - 1, line) for number, line in lines)  # datasets count from 0
                for window in lazy_groups_of(numbered, batch_size * SORTED_BATCHES):
                    sentences = [line.strip() for _, line in window]
                    names = [f"line {index + 1} of {input_file}" for index, _ in window]
                    instances = predictor.sentence_instances(sentences, names)
                    for number, vectors in predictor.batched_vectors(instances, batch_size):
                        dataset = output.create_dataset(str(window[number][0]), data=vectors)
                        aligned = instances[number]["sentence"].metadata  # type: ignore
                        tokens = aligned.words if predictor.pools else aligned.wordpieces
                        dataset.attrs.create("tokens", tokens, dtype=h5py.string_dtype())
                        progress.update(1)
                    for (index, _), sentence in zip(window, sentences):  # in input order: the last one wins
                        sentence_to_index[sentence] = str(index)
            index_dataset = output.create_dataset("sentence_to_index", (1,), dtype=h5py.string_dtype())
            index_dataset[0] = json.dumps(sentence_to_index)
    except BaseException:
        if os.path.exists(output_file):
            os.remove(output_file)
        raise
    logger.info("Embedded %d sentences of %s into %s", num_lines, input_file, output_file)
    return num_lines


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
