"""
Figure 2: the FLOP rate the Masked ELMo encoder achieves in forward + backward, against this machine's
float32 matmul peak measured in the same run on the same thread count: the faster of `torch.mm` (MKL) and
oneDNN's packed product (which the encoder's CPU recurrence uses) on two square matrices, `--matmul-size`,
2 n^3 FLOPs. On a CPU the encoder is also run with torch's own CPU LSTM (`cpu_recurrence=False`).

The encoder's FLOPs are counted analytically (`common.masked_elmo_training_flops_per_token`):

    per token, per direction, per layer:  2 * 4 * cells * (d + d/2)     the four gates, input + recurrent
                                        + 2 * cells * d/2               the state projection
    x 2 directions x L layers x 3 (backward = 2 x forward: gradients of inputs and of weights)

so at d=768, 4096 cells, 2 layers: 3 * 2 * 2 * (37.7M + 3.1M) = 491 MFLOP per token. Element-wise gate
arithmetic, LayerNorm and the skip connection are not counted (under 1%).

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/encoder_flops.py [--paper]

The CPU record the guides cite, whole (both sizes, both parts), in one invocation (about 20 minutes on one core):

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/encoder_flops.py \\
        --record benchmarks/results/records/encoder_flops.json

`--record` measures the record's rows in turn (its title, header and row names are the ones it had):
"quiet machine" at the paper's size (`--paper-size`, `--paper-batch-size`: 768x4096, batch 64), then at the
default one (`--size`, `--batch-size`: 512x2048, batch 16), the load core (`--busy-core`, default 0) left
idle; then "other core busy" at the default size and at the paper's, while `core_load.py` runs a one-thread
pre-training loop on the load core. Leave that core idle otherwise: the record says how busy it was during
each part. A tiny run, to check the record's form: `--record /tmp/x.json --size 32x64 --batch-size 2
--paper-size 48x96 --paper-batch-size 4 --sequence-length 4 --matmul-size 64 --repeats 1 --warmup 0`.
"""

import os

import common
import core_load
import torch

from maelmo_plugin.lm.modules.recurrence.cpu_arithmetic import packed_linear

TARGET = 0.60
QUIET, BUSY = core_load.QUIET, core_load.BUSY
OURS, TORCH_LSTM = "Masked ELMo", "same, torch's CPU LSTM"
MATMULS = ("mm", "oneDNN")
HEADER = [
    "encoder",
    "d/cells",
    "batch",
    "encoder GFLOP/s",
    "matmul peak GFLOP/s (mm; oneDNN)",
    "fraction",
    "target",
    "",
]


def measure(args, device, size: str, batch_size: int, judged: bool = True) -> tuple[list, dict]:
    """The rows of one size (HEADER's cells, one per encoder), and their raw figures."""
    dim, cells = common.parse_size(size)
    embeddings = torch.randn(batch_size, args.sequence_length, dim, device=device, requires_grad=True)
    a, b = (torch.randn(args.matmul_size, args.matmul_size, device=device) for _ in range(2))
    encoders = {OURS: common.masked_elmo_encoder(dim, cells, args.layers, device)}
    # a @ b by MKL, and by oneDNN with b packed beforehand (packed_linear computes a @ weight^T).
    matmuls = {"mm": lambda: torch.mm(a, b)}
    if device.type == "cpu":
        encoders[TORCH_LSTM] = common.masked_elmo_encoder(dim, cells, args.layers, device, False)
        product = packed_linear(b.t(), args.matmul_size)
        matmuls["oneDNN"] = lambda: product(a)
    # Interleaved, so that the peaks and the encoders see the same background load.
    passes = {name: common.encoder_pass(encoder, embeddings) for name, encoder in encoders.items()}
    seconds = common.interleaved({**passes, **matmuls}, device, args.warmup, args.repeats)
    tokens = batch_size * args.sequence_length
    flops = tokens * common.masked_elmo_training_flops_per_token(dim, cells, args.layers)
    peaks = {name: 2 * args.matmul_size**3 / seconds[name] for name in matmuls}
    peak = max(peaks.values())
    each = "; ".join(common.significant(peaks[name] / 1e9) if name in peaks else "–" for name in MATMULS)
    rows = []
    for name in encoders:
        fraction = flops / seconds[name] / peak
        rows.append(
            [
                name,
                f"{dim}/{cells}",
                batch_size,
                common.significant(flops / seconds[name] / 1e9),
                f"{common.significant(peak / 1e9)} ({each})"
                if name == OURS
                else common.significant(peak / 1e9),
                f"{fraction:.0%}",
                f"≥{TARGET:.0%}" if judged else "–",
                common.verdict(fraction, TARGET) if judged else "",
            ]
        )
    raw = {"seconds": seconds, "tokens": tokens, "flops_per_pass": flops, "matmul_peaks": peaks}
    return rows, raw


def record_grid(args) -> list[tuple[str, str, int, bool]]:
    """The record's runs, (part, size, batch, judged), in its rows' order. As in the record first transcribed,
    the paper-size run beside the load carries no verdict: the load can slow the square matmul more than the
    encoder (the notes give both changes), and the quiet run is the one that counts."""
    paper, default = (args.paper_size, args.paper_batch_size), (args.size, args.batch_size)
    return [(QUIET, *paper, True), (QUIET, *default, True), (BUSY, *default, True), (BUSY, *paper, False)]


def write_record(args, device) -> None:
    """Measures the record's runs (`record_grid`), the busy ones beside a load on `--busy-core`, and writes it."""
    rows, measured = [], []
    loadavg = os.getloadavg()

    def measure_part(part: str) -> None:
        for run, size, batch_size, judged in record_grid(args):
            if run == part:
                run_rows, raw = measure(args, device, size, batch_size, judged)
                for row in run_rows:
                    print(f"# {run}: " + " | ".join(str(cell) for cell in row), flush=True)
                rows.extend([run, *row] for row in run_rows)
                measured.append({"run": run, "size": size, "batch_size": batch_size, **raw})

    parts = core_load.quiet_then_busy(args.busy_core, measure_part)
    common.print_table(["run", *HEADER], rows)
    common.write_record(
        args.record,
        "Encoder FLOP rate against the matmul peak, CPU",
        f"{common.machine_description(device)}; {args.threads} torch thread(s); core {args.busy_core} idle "
        f'("{QUIET}") or running a one-thread pre-training loop ("{BUSY}")',
        ["run", *HEADER],
        rows,
        data={
            "sequence_length": args.sequence_length,
            "layers": args.layers,
            "matmul_size": args.matmul_size,
            "warmup": args.warmup,
            "repeats": args.repeats,
            "runs": measured,
            **parts,
            "loadavg_before": list(loadavg),
        },
        notes=notes(args, measured, parts),
    )


def notes(args, measured: list, parts: dict) -> str:
    text = (
        f"{args.layers} layers, sequence {args.sequence_length}, forward and backward from zero states, the "
        f"encoder's FLOPs counted analytically. The peak is the faster of `torch.mm` (MKL) and oneDNN's packed "
        f"product on two {args.matmul_size} x {args.matmul_size} float32 matrices, interleaved with the encoders "
        f"(median of {args.repeats} after {args.warmup} warm-up). {core_load.describe(parts)}"
    )
    quiet = {(run["size"], run["batch_size"]): run for run in measured if run["run"] == QUIET}
    changes = []
    for run in measured:
        before = quiet.get((run["size"], run["batch_size"]))
        if run["run"] == BUSY and before:
            peak = max(run["matmul_peaks"].values()) / max(before["matmul_peaks"].values())
            rate = before["seconds"][OURS] / run["seconds"][OURS]
            changes.append(
                f"the matmul peak {peak:.0%}, the Masked ELMo encoder's rate {rate:.0%} "
                f"({run['size'].replace('x', '/')}, batch {run['batch_size']})"
            )
    if changes:
        text += " Beside the load, against the quiet run at the same size: " + "; ".join(changes) + "."
    return text + " The busy paper-size rows carry no verdict: the quiet run is the one that counts."


def main() -> None:
    parser = common.parser(__doc__)
    common.add_size_options(parser, "512x2048", batch_size=16, sequence_length=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--matmul-size", type=int, default=2048)
    parser.add_argument(
        "--paper", action="store_true", help="the paper's size: --paper-size, --paper-batch-size"
    )
    parser.add_argument(
        "--paper-size", default="768x4096", help="d x cells of --paper and the record's paper rows"
    )
    parser.add_argument("--paper-batch-size", type=int, default=64)
    parser.add_argument("--record", help="measure the CPU record's rows (see above) and write it here")
    parser.add_argument("--busy-core", type=int, default=0, help="the core the record's busy rows load")
    args = parser.parse_args()
    if args.record and (args.paper or args.device != "cpu"):
        raise SystemExit("--record measures the CPU record's own runs, both sizes: on a CPU, without --paper")
    if args.paper:
        args.size, args.batch_size = args.paper_size, args.paper_batch_size
    device = common.setup(args)
    if args.record:
        write_record(args, device)
        return
    rows, raw = measure(args, device, args.size, args.batch_size)
    print(f"# encoder {args.size}, {args.layers} layers, batch {args.batch_size} x {args.sequence_length}")
    print(
        f"# matmul peaks (GFLOP/s, n={args.matmul_size}): "
        + ", ".join(f"{name} {value / 1e9:.1f}" for name, value in raw["matmul_peaks"].items())
    )
    common.print_table(HEADER, rows)


if __name__ == "__main__":
    main()
