"""
Bulk embedding with `allennlp maelmo-embed`: sentences per second and peak memory (RSS) at 10,000 and
100,000 lines, to show that memory does not grow with the input.

The input is WikiText-2's training text cut into sentences (at " . "), blank lines and headings left out,
repeated up to the number of lines. Each size runs in a fresh process that loads the archive and then runs
`embed_file` (the command's code path: checks, fingerprint, batches written to OUTPUT.partial/, the final
copy into OUTPUT); sentences/s counts that part, not the model's loading. Peak RSS is the process's
`ru_maxrss`, loading included.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 0 .venv/bin/python benchmarks/bulk_embedding.py \\
        --archive /tmp/qs/model.tar.gz --lines 10000 100000 --layer -1 --pool sentence

The archive is the Quickstart's (`training_config/lm/pretrain_small.jsonnet`; speed does not depend on
training, so one epoch does). The defaults write one vector per line (`--layer -1 --pool sentence`), so that
100,000 lines fit on any disk; `--pool none --layer all` writes every word-piece's L + 1 vectors (about
60 KB a line at the Quickstart's size, and twice that while the batches are copied into the output).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.environ.get(
    "MAELMO_SHARED_DATA", os.path.join(os.path.dirname(REPOSITORY), "shared", "data")
)
WIKITEXT2_TRAIN = os.path.join(SHARED_DATA, "wikitext-2", "train.txt")


def wikitext_sentences() -> list[str]:
    sentences = []
    with open(WIKITEXT2_TRAIN, encoding="utf-8") as lines:
        for line in lines:
            line = line.strip()
            if not line or line.startswith("="):
                continue
            sentences.extend(part.strip() + " ." for part in line.split(" . ") if part.strip(" .") != "")
    return sentences


def write_input(path: str, count: int, distinct: int = 0) -> None:
    sentences = wikitext_sentences()[: distinct or None]
    with open(path, "w", encoding="utf-8") as output:
        for number in range(count):
            output.write(sentences[number % len(sentences)] + "\n")


def child(args: argparse.Namespace) -> None:
    sys.path.insert(0, REPOSITORY)
    import torch
    from allennlp.predictors import Predictor

    import maelmo_plugin  # noqa: F401
    from maelmo_plugin.commands.embed import embed_file
    from maelmo_plugin.lm.loading import load_language_model_archive

    start = time.perf_counter()
    archive = load_language_model_archive(args.archive)
    layer = None if args.layer == "all" else (args.layer if args.layer == "mix" else int(args.layer))
    pool = None if args.pool == "none" else args.pool
    predictor = Predictor.from_archive(
        archive,
        "maelmo_representations",
        extra_args={"layer": layer, "pool": pool, "precision": args.precision},
    )
    loaded = time.perf_counter()
    count = embed_file(predictor, args.input, args.output, batch_size=args.batch_size, force=True)
    done = time.perf_counter()
    print(
        json.dumps(
            {
                "lines": count,
                "load_s": loaded - start,
                "embed_s": done - loaded,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "output_mb": os.path.getsize(args.output) / 1e6,
                "threads": torch.get_num_threads(),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archive", required=True)
    parser.add_argument("--lines", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--layer", default="-1", help="all, mix or a layer (default -1)")
    parser.add_argument("--pool", default="sentence", help="none, first, mean or sentence (default sentence)")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--work-dir", default=None, help="where inputs and outputs go (default: a temporary one)"
    )
    parser.add_argument(
        "--distinct",
        type=int,
        default=0,
        help="repeat the first N sentences only (default: all 76,683), so that inputs of different sizes have "
        "the same sentence lengths, which decide the peak memory of a batch",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    work = args.work_dir or tempfile.mkdtemp(prefix="bulk_embedding_")
    os.makedirs(work, exist_ok=True)
    rows = []
    for count in args.lines:
        input_file, output_file = os.path.join(work, f"{count}.txt"), os.path.join(work, f"{count}.hdf5")
        write_input(input_file, count, args.distinct)
        command = [sys.executable, os.path.abspath(__file__), "--child", "--input", input_file]
        command += ["--output", output_file, "--archive", args.archive, "--layer", args.layer]
        command += ["--pool", args.pool, "--precision", args.precision, "--batch-size", str(args.batch_size)]
        result = subprocess.run(command, capture_output=True, text=True, check=True)
        row = json.loads(result.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(json.dumps(row), flush=True)
        os.remove(output_file)
    print(
        f"\n`--layer {args.layer} --pool {args.pool} --precision {args.precision} --batch-size {args.batch_size}`\n"
    )
    print(
        "| lines | threads | model loading (s) | embedding (s) | sentences/s | peak RSS (MB) | output (MB) |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['lines']:,} | {row['threads']} | {row['load_s']:.1f} | {row['embed_s']:.0f} | "
            f"{row['lines'] / row['embed_s']:.1f} | {row['peak_rss_mb']:.0f} | {row['output_mb']:.1f} |"
        )


if __name__ == "__main__":
    main()
