"""
Figure 1: forward + backward tokens/s of the Masked ELMo encoder (torch's fused `nn.LSTM(proj_size=...)`,
paper section 2.2) against AllenNLP's `ElmoLstm` (ELMo's cell: a Python loop over time steps, cell and
projection clipping at 3) at equal sizes.

"Equal sizes" means the same input d, the same cells and the same per-direction projection d/2 in 2
layers. ElmoLstm's upper layer reads only its own direction (d/2 wide) where Masked ELMo's reads both (d),
so ElmoLstm does slightly less arithmetic per token: the tokens/s ratio understates the per-FLOP speed-up,
which is printed too.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/encoder_speed.py
    ... benchmarks/encoder_speed.py --all        # d=512/2048 and 768/4096, batches 16 and 64 (long on 1 core)

The CPU record the guides cite, whole, in one invocation (about 15 minutes on one core):

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/encoder_speed.py \\
        --record benchmarks/results/records/encoder_speed.json

`--record` measures the record's rows in turn (its title, header and row names are the ones the guides name):
"quiet machine" at each of `--sizes` (default 512x2048 and 768x4096) with the first of `--batch-sizes`
(default 16), the load core (`--busy-core`, default 0) left idle; then "other core busy" at the first size with
each batch size (default 16 and 64), while `core_load.py` runs a one-thread pre-training loop on the load
core. Leave that core idle otherwise: the record says how busy it was during each part. A tiny run, to check
the record's form: `--record /tmp/x.json --sizes 32x64 48x96 --batch-sizes 2 4 --sequence-length 4
--repeats 1 --warmup 0`.
"""

import os

import common
import core_load
import torch
from allennlp.modules.elmo_lstm import ElmoLstm

TARGET = 2.5
QUIET, BUSY = core_load.QUIET, core_load.BUSY
RECORD_SIZES, RECORD_BATCH_SIZES = ["512x2048", "768x4096"], [16, 64]
HEADER = [
    "d/cells",
    "batch",
    "Masked ELMo tok/s",
    "same, torch's CPU LSTM tok/s",
    "ElmoLstm tok/s",
    "torch's CPU LSTM over ElmoLstm",
    "speed-up",
    "per FLOP",
    "target",
    "",
]
# The record's ratio of two of its own columns, which the pages compute (draw_records.py) and the guides cite.
COMPUTED = [
    {
        "column": "Masked ELMo over torch's CPU LSTM",
        "ratio": ["Masked ELMo tok/s", "same, torch's CPU LSTM tok/s"],
    }
]


def elmo_lstm_pass(dim: int, cells: int, layers: int, embeddings: torch.Tensor, device) -> callable:
    lstm = ElmoLstm(
        dim,
        dim // 2,
        cells,
        layers,
        requires_grad=True,
        memory_cell_clip_value=3.0,
        state_projection_clip_value=3.0,
    ).to(device)
    mask = torch.ones(embeddings.shape[:2], dtype=torch.bool, device=device)

    def run() -> None:
        lstm.zero_grad(set_to_none=True)
        lstm.reset_states()  # as the Masked ELMo side: every pass starts from zero states
        lstm(embeddings, mask)[-1].sum().backward()

    return run


def measure(args, device, dim: int, cells: int, batch_size: int) -> tuple[list, dict]:
    """One row of the table (HEADER's cells), and its raw figures."""
    embeddings = torch.randn(batch_size, args.sequence_length, dim, device=device, requires_grad=True)
    sides = {
        "masked_elmo": common.encoder_pass(
            common.masked_elmo_encoder(dim, cells, args.layers, device), embeddings
        ),
        "elmo_lstm": elmo_lstm_pass(dim, cells, args.layers, embeddings, device),
    }
    if device.type == "cpu":
        torch_lstm_encoder = common.masked_elmo_encoder(dim, cells, args.layers, device, cpu_recurrence=False)
        sides["torch_lstm"] = common.encoder_pass(torch_lstm_encoder, embeddings)
    seconds = common.interleaved(sides, device, args.warmup, args.repeats)
    tokens = batch_size * args.sequence_length
    ours = common.masked_elmo_training_flops_per_token(dim, cells, args.layers)
    theirs = common.elmo_lstm_training_flops_per_token(dim, dim // 2, cells, args.layers)
    speedup = seconds["elmo_lstm"] / seconds["masked_elmo"]
    if "torch_lstm" in seconds:
        torch_lstm = [
            common.significant(tokens / seconds["torch_lstm"]),
            f"{seconds['elmo_lstm'] / seconds['torch_lstm']:.2f}x",
        ]
    else:  # on a GPU the encoder runs torch's cuDNN LSTM itself: there is no CPU recurrence to set it against
        torch_lstm = ["–", "–"]
    row = [
        f"{dim}/{cells}",
        batch_size,
        common.significant(tokens / seconds["masked_elmo"]),
        torch_lstm[0],
        common.significant(tokens / seconds["elmo_lstm"]),
        torch_lstm[1],
        f"{speedup:.2f}x",
        f"{speedup * ours / theirs:.2f}x",
        f"≥{TARGET}x",
        common.verdict(speedup, TARGET),
    ]
    raw = {
        "seconds": seconds,
        "tokens": tokens,
        "flops_per_token": {"masked_elmo": ours, "elmo_lstm": theirs},
    }
    return row, raw


def record_grid(sizes: list, batch_sizes: list) -> list[tuple[str, str, int]]:
    """The record's rows, (run, size, batch): quiet at each size with the first batch size, then busy at the
    first size with each batch size."""
    return [(QUIET, size, batch_sizes[0]) for size in sizes] + [
        (BUSY, sizes[0], batch) for batch in batch_sizes
    ]


def write_record(args, device) -> None:
    """Measures the record's rows (`record_grid`), the busy ones beside a load on `--busy-core`, and writes it."""
    grid = record_grid(args.sizes, args.batch_sizes)
    rows, measured = [], []
    loadavg = os.getloadavg()

    def measure_part(run: str) -> None:
        for name, size, batch_size in grid:
            if name == run:
                row, raw = measure(args, device, *common.parse_size(size), batch_size)
                print(f"# {run}: " + " | ".join(str(cell) for cell in row), flush=True)
                rows.append([run, *row])
                measured.append({"run": run, "size": size, "batch_size": batch_size, **raw})

    parts = core_load.quiet_then_busy(args.busy_core, measure_part)
    common.print_table(["run", *HEADER], rows)
    common.write_record(
        args.record,
        "Encoder forward + backward against AllenNLP's ElmoLstm, CPU",
        f"{common.machine_description(device)}; {args.threads} torch thread(s); core {args.busy_core} idle "
        f'("{QUIET}") or running a one-thread pre-training loop ("{BUSY}")',
        ["run", *HEADER],
        rows,
        data={
            "sequence_length": args.sequence_length,
            "layers": args.layers,
            "warmup": args.warmup,
            "repeats": args.repeats,
            "rows": measured,
            **parts,
            "loadavg_before": list(loadavg),
        },
        notes=notes(args, measured, parts),
        computed=COMPUTED,
    )


def notes(args, measured: list, parts: dict) -> str:
    flops = [row["flops_per_token"] for row in measured]
    less = sorted({f"{1 - each['elmo_lstm'] / each['masked_elmo']:.0%}" for each in flops})
    text = (
        f"{args.layers} layers, sequence {args.sequence_length}, forward and backward from zero states, median of "
        f"{args.repeats} after {args.warmup} warm-up, the three encoders interleaved (their order alternating). "
        f'`ElmoLstm` does {" to ".join(less)} less arithmetic per token at these sizes, which "per FLOP" '
        f"corrects for. {core_load.describe(parts)}"
    )
    misses = []
    for row in measured:
        seconds = row["seconds"]
        speedup = seconds["elmo_lstm"] / seconds["masked_elmo"]
        if speedup < TARGET:
            rate = row["tokens"] * row["flops_per_token"]["masked_elmo"] / seconds["masked_elmo"] / 1e9
            misses.append(
                f"at {row['size'].replace('x', '/')}, batch {row['batch_size']} ({row['run']}), from "
                f"{common.significant(rate)} to {common.significant(rate * TARGET / speedup)} GFLOP/s"
            )
    if misses:
        text += (
            f" {TARGET}x would take Masked ELMo's FLOP rate "
            + "; ".join(misses)
            + " (the core's matmul peak: "
            "encoder_flops)."
        )
    return text + ' "Masked ELMo over torch\'s CPU LSTM" is computed from the tok/s cells.'


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--sizes", nargs="+", help="d x cells, e.g. 512x2048 768x4096 (default 512x2048)")
    parser.add_argument("--batch-sizes", nargs="+", type=int, help="default 16")
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument(
        "--all", action="store_true", help="the full grid: 512x2048 and 768x4096, batches 16 and 64"
    )
    parser.add_argument("--record", help="measure the CPU record's rows (see above) and write it here")
    parser.add_argument("--busy-core", type=int, default=0, help="the core the record's busy rows load")
    args = parser.parse_args()
    if args.record:
        if args.all or args.device != "cpu":
            raise SystemExit("--record measures the CPU record's own grid: run it on a CPU, without --all")
        args.sizes = args.sizes or RECORD_SIZES
        args.batch_sizes = args.batch_sizes or RECORD_BATCH_SIZES
    elif args.all:
        args.sizes, args.batch_sizes = RECORD_SIZES, RECORD_BATCH_SIZES
    args.sizes, args.batch_sizes = args.sizes or ["512x2048"], args.batch_sizes or [16]
    device = common.setup(args)
    print(
        f"# sequence {args.sequence_length}, {args.layers} layers, forward + backward, median of {args.repeats}"
    )
    if args.record:
        write_record(args, device)
        return
    rows = [
        measure(args, device, *common.parse_size(size), batch_size)[0]
        for size in args.sizes
        for batch_size in args.batch_sizes
    ]
    common.print_table(HEADER, rows)


if __name__ == "__main__":
    main()
