"""
The `maelmo-embed` job: writes the vectors of every sentence of a text file to HDF5, in the layout
of AllenNLP 1.x's `allennlp elmo` command.

    allennlp maelmo-embed ARCHIVE INPUT.txt OUTPUT.hdf5 [--batch-size 64] [--cuda-device -1]
                          [--layer N|mix] [--pool first|mean|sentence] [--precision fp32|int8|bf16|auto]
                          [--storage float32|float16] [--processes N] [--shard K/N] [--force]

INPUT has one sentence per line, in UTF-8; it may be gzip, bzip2 or xz. OUTPUT holds one dataset per line,
named by its 0-based line index, of shape (L + 1, num_tokens, dim) (or (num_tokens, dim) with `--layer`),
and a dataset `sentence_to_index` whose one string is the JSON mapping {sentence: index}. The tokens are
the word-pieces, [CLS] and [SEP] included, or with `--pool first|mean` the words (see the
`maelmo_representations` predictor); each dataset's `tokens` attribute lists them. With `--pool sentence`
each line has one vector, the mean over its word-pieces: shape (L + 1, dim), or (dim,) with `--layer`
(`tokens` lists the word-pieces averaged).
`--precision` is the predictor's `precision`: int8 or bfloat16 products on a CPU, for speed (their
error and speed: docs/performance.md). `--storage float16` stores the vectors in half the bytes (their rounding:
docs/embedding.md). Before any vector is computed, the command states OUTPUT's size and refuses when the disk
cannot hold it (`maelmo_plugin/embedding/output_size.py`). The file is in the HDF5 1.8 format, whose attributes have no size
limit, so a line of any length keeps its `tokens`.

OUTPUT appears only when complete: the batches are written to `OUTPUT.partial/` and a stopped run (error,
Ctrl-C, `kill -9`) continues from there when the same command is run again, to the vectors an uninterrupted
run gives, bit for bit (`maelmo_plugin/embedding/job.py`). An existing OUTPUT is replaced only with `--force`. The output path,
the input and an unfinished run are checked before the model loads.

`--shard K/N` embeds the K-th of N parts of INPUT (`maelmo_files/embedding/shards.py`), for N machines,
GPUs or jobs; `allennlp maelmo-merge` joins the N files into the file one run writes (docs/distributed.md).

`--processes N` embeds with N worker processes, one batch each at a time, on the CPU
(`maelmo_plugin/embedding/workers.py`):
the same file as `--processes 1`, bit for bit, and a run stopped with one N continues with another.

Declared in `maelmo_declarations/commands/embed.py`.
"""

import argparse
import logging
import sys

import torch
from allennlp.predictors import Predictor

from maelmo_declarations.options import sentences
from maelmo_declarations.owned_outputs import partial_path
from maelmo_plugin.embedding.job import written_sentences
from maelmo_plugin.embedding.pipeline import plan_embedding, run_embedding
from maelmo_plugin.embedding.workers import WorkerStopped
from maelmo_plugin.lm.loading import load_language_model_archive
from maelmo_plugin.lm.predictors.representations import RepresentationsPredictor

logger = logging.getLogger(__name__)


def run(args: argparse.Namespace) -> None:
    """
    Embeds a file of sentences with a Masked ELMo, ELMo-LM or BERT* archive into HDF5: the arguments to
    `maelmo_plugin.embedding.embed_file`, the one embedding job, which also serves `MaskedElmo.embed_file`.
    """
    settings = {"layer": args.layer, "pool": args.pool, "precision": args.precision}

    def load() -> RepresentationsPredictor:
        if args.processes > 1:
            torch.set_num_threads(1)  # the workers compute; this process forks them with no thread pool
        archive = load_language_model_archive(args.archive_file, cuda_device=args.cuda_device)
        predictor = Predictor.from_archive(archive, "maelmo_representations", extra_args=settings)
        assert isinstance(predictor, RepresentationsPredictor)
        return predictor

    try:
        # Every check that needs no model, then the model, then the job (`maelmo_plugin/embedding/pipeline.py`).
        plan = plan_embedding(
            args.input_file,
            args.output_file,
            {**settings, "scalar_mix_parameters": None},
            args.batch_size,
            args.force,
            args.processes,
            args.shard,
            args.cuda_device,
            args.storage,
        )
        count = run_embedding(plan, load, report=lambda statement: print(statement, file=sys.stderr))
    except (KeyboardInterrupt, WorkerStopped) as stop:
        print(_stopped(stop, args.output_file), file=sys.stderr)
        sys.exit(130 if isinstance(stop, KeyboardInterrupt) else 1)
    part = f" (shard {args.shard} of {args.input_file})" if args.shard else ""
    if args.shard and count == 0:
        part = (
            f" (shard {args.shard} of {args.input_file}: empty, as shards are runs of whole windows of 32 x "
            f"--batch-size lines and the input has fewer windows than shards; it still merges)"
        )
    print(f"Wrote the vectors of {sentences(count)} to {args.output_file}{part}")


def _stopped(stop: BaseException, output_file: str) -> str:
    """What a run stopped by Ctrl-C or a dead worker keeps, and how to continue it."""
    written = written_sentences(output_file)
    how = "Interrupted" if isinstance(stop, KeyboardInterrupt) else str(stop)
    if not written:
        return f"{how}, before any sentence was embedded."
    return (
        f"{how}: the vectors of {sentences(written)} are kept in {partial_path(output_file)}; run the same "
        f"command again to continue from there."
    )
