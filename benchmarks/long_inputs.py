"""
Long inputs: one document of 512, 4,000, 16,000 and 20,000 word-pieces embedded in one call of the Python API
(`MaskedElmo.embed([document])`: all L + 1 layers back as numpy, the encoder from zero states, no window).

* Time per word-piece at each length, measured interleaved (the lengths take turns, as in every figure):
  a biLSTM does the same work per step whatever the length, so it should stay flat.
* The peak memory of one call at each length: the growth of the process's peak RSS (VmHWM, reset through
  /proc/self/clear_refs) over its RSS before the call, measured in a fresh process per length (each first
  call at its length, as a user's), against what the call returns, (L + 1) x length x d float32. At the
  longest length also the recurrence in one chunk over the whole input (`INFERENCE_CHUNK_ROWS` past the
  length, as inference ran before it ran in chunks, less a copy of the input products) and the words' mean
  pooling (`pool="mean"`).

The model is a freshly initialised `maelmo_masked_elmo_lm` (speed and memory do not depend on training), at
the Quickstart's size by default (d=128, 512 cells, the sample vocabulary); `--paper`: d=768, 4096 cells,
bert-base-cased's vocabulary when ../shared/data holds it, and lengths 512 and 2,000 (each step reads
126 MB of weights: 20 to 40 ms per word-piece on one core). The document is the sample corpus's text, cut
at a word.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/long_inputs.py
    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/long_inputs.py --paper --repeats 1
"""

import json
import os
import subprocess
import sys
import tempfile

import common
from representations import make_archive

from maelmo_plugin.api import MaskedElmo
from maelmo_plugin.lm.modules.recurrence import cpu

VARIANTS = {
    "chunked": "as shipped",
    "whole": "one chunk: the recurrence over the whole input at once",
    "mean": 'pool="mean" (one vector per word)',
}


def document(elmo: MaskedElmo, num_pieces: int) -> str:
    """The sample corpus's text cut at a word so that `[CLS] text [SEP]` has at most `num_pieces` pieces."""
    text = " ".join((common.SAMPLE_DIR / "train.txt").read_text(encoding="utf-8").split())
    while True:
        encoding = elmo._reader.tokenizer.batch_encodings([text])[0]
        if len(encoding.ids) >= num_pieces:
            break
        text = f"{text} {text}"
    cut = num_pieces - 2
    while encoding.word_ids[cut] == encoding.word_ids[cut - 1]:  # not inside a word
        cut -= 1
    return text[: encoding.offsets[cut][0]].rstrip()


def memory_kb(field: str) -> int:
    with open("/proc/self/status", encoding="utf-8") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def child(archive: str, num_pieces: int, variant: str) -> None:
    """One call at one length in this fresh process; prints its peak memory growth as JSON."""
    elmo = MaskedElmo.from_archive(archive)
    text = document(elmo, num_pieces)
    elmo.embed(["A short sentence warms the code up."])
    if variant == "whole":
        cpu.INFERENCE_CHUNK_ROWS = 10**9
    before = memory_kb("VmRSS")
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # VmHWM := VmRSS
    (vectors,) = elmo.embed([text], pool="mean" if variant == "mean" else None)
    peak = memory_kb("VmHWM")
    print(json.dumps({"growth_mb": (peak - before) / 1024, "output_mb": vectors.nbytes / 2**20}))


def measure_memory(archive: str, num_pieces: int, variant: str) -> dict:
    command = [sys.executable, os.path.abspath(__file__), "--child", archive, str(num_pieces), variant]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--size", default="128x512", help="d x cells (the Quickstart's; --paper: 768x4096)")
    parser.add_argument("--lengths", default="512,4000,16000,20000", help="word-pieces, [CLS] and [SEP] in")
    parser.add_argument("--paper", action="store_true", help="768x4096, lengths 512,2000")
    parser.add_argument("--skip-memory", action="store_true", help="time only (no process per length)")
    args = parser.parse_args()
    if args.paper:
        args.size, args.lengths = "768x4096", "512,2000"
    device = common.setup(args)
    dim, cells = common.parse_size(args.size)
    lengths = [int(length) for length in args.lengths.split(",")]
    vocab = common.BERT_VOCAB if args.paper and os.path.exists(common.BERT_VOCAB) else None
    vocab = vocab or str(common.SAMPLE_DIR / "vocab.txt")
    with tempfile.TemporaryDirectory() as directory:
        archive = make_archive(directory, vocab, dim, cells)
        elmo = MaskedElmo.from_archive(archive)
        documents = {length: document(elmo, length) for length in lengths}
        tokenizer = elmo._reader.tokenizer
        pieces = {n: len(tokenizer.batch_encodings([text])[0].ids) + 2 for n, text in documents.items()}
        runs = {length: (lambda text=text: elmo.embed([text])) for length, text in documents.items()}
        seconds = common.interleaved(runs, device, args.warmup, args.repeats)
        rows = [(n, "chunked") for n in lengths] + [(lengths[-1], "whole"), (lengths[-1], "mean")]
        memory = {} if args.skip_memory else {row: measure_memory(archive, *row) for row in rows}
    per_piece = {length: seconds[length] / pieces[length] for length in lengths}
    print(
        f"# d={dim}, {cells} cells, L=2, batch 1 (one document per call), all L + 1 layers returned; "
        f"INFERENCE_CHUNK_ROWS={cpu.INFERENCE_CHUNK_ROWS}; median of {args.repeats} after "
        f"{args.warmup} warm-up, lengths interleaved"
    )
    common.print_table(
        ["word-pieces", "seconds", "ms per word-piece", f"vs {lengths[0]}"],
        [
            [pieces[n], seconds[n], 1000 * per_piece[n], f"{per_piece[n] / per_piece[lengths[0]]:.2f}x"]
            for n in lengths
        ],
    )
    if not memory:
        return
    print(
        "\n# peak memory of one call (fresh process per row): growth of the peak RSS over the RSS before it"
    )
    common.print_table(
        ["word-pieces", "run", "peak growth (MB)", "returned (MB)", "peak / returned"],
        [
            [
                pieces[n],
                VARIANTS[variant],
                row["growth_mb"],
                row["output_mb"],
                row["growth_mb"] / row["output_mb"],
            ]
            for (n, variant), row in memory.items()
        ],
    )


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        main()
