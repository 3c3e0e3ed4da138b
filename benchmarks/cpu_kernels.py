"""
The measurements behind the CPU recurrence's choices (`maelmo_plugin/lm/modules/recurrence/cpu_arithmetic.py`:
`packed_linear` and `tanh_into`): each matrix product the LSTM layer makes, by MKL
(`torch.nn.functional.linear`) and by oneDNN with the weight packed once, the packing's own cost, and
torch's CPU tanh against 2 sigmoid(2x) - 1.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/cpu_kernels.py [--paper]
"""

import common
import torch

from maelmo_plugin.lm.modules.recurrence.cpu_arithmetic import packed_linear, tanh_into


def products(dim: int, cells: int, batch_size: int, sequence_length: int):
    """(name, rows, weight shape) of each product of one direction of one layer, forward and backward."""
    projection, steps = dim // 2, batch_size * sequence_length
    return [
        ("input, all steps at once", steps, (4 * cells, dim)),
        ("input gradient, all steps", steps, (dim, 4 * cells)),
        ("recurrent, per step", batch_size, (4 * cells, projection)),
        ("projection, per step", batch_size, (projection, cells)),
        ("recurrent gradient, per step", batch_size, (projection, 4 * cells)),
        ("projection gradient, per step", batch_size, (cells, projection)),
    ]


def main() -> None:
    parser = common.parser(__doc__)
    common.add_size_options(parser, "512x2048", batch_size=16, sequence_length=128)
    args = common.parse_with_paper_option(parser)
    device = common.setup(args)
    dim, cells = common.parse_size(args.size)
    rows = []
    for name, num_rows, shape in products(dim, cells, args.batch_size, args.sequence_length):
        weight, inputs = torch.randn(*shape), torch.randn(num_rows, shape[1])
        packed = packed_linear(weight, num_rows, calls=args.sequence_length)
        # Enough calls for a few hundred ms per side.
        calls = max(1, int(3e10 / (2 * num_rows * weight.numel())))
        # Each lambda runs within this iteration (interleaved() returns before the next): the loop's values.
        seconds = common.interleaved(
            {
                "mkl": lambda: [torch.nn.functional.linear(inputs, weight) for _ in range(calls)],  # noqa: B023
                "onednn": lambda: [packed(inputs) for _ in range(calls)],  # noqa: B023
                "pack": lambda: packed_linear(weight, num_rows, calls=args.sequence_length),  # noqa: B023
            },
            device,
            args.warmup,
            args.repeats,
        )
        flops = 2 * num_rows * weight.numel() * calls
        rows.append(
            [
                name,
                f"({num_rows} x {shape[1]}) @ ({shape[1]} x {shape[0]})",
                flops / seconds["mkl"] / 1e9,
                flops / seconds["onednn"] / 1e9,
                f"{seconds['mkl'] / seconds['onednn']:.2f}x",
                seconds["pack"] * 1e3,
            ]
        )
    print(f"# d={dim}, {cells} cells, batch {args.batch_size} x {args.sequence_length}")
    common.print_table(
        ["product", "shape", "MKL GFLOP/s", "oneDNN packed GFLOP/s", "speed-up", "packing ms"], rows
    )
    gates = torch.randn(2, args.batch_size, cells)
    out = torch.empty_like(gates)
    seconds = common.interleaved(
        {
            "tanh": lambda: tanh_into(gates, out=out),  # what the recurrence runs (torch.tanh)
            "sigmoid": lambda: torch.sigmoid(torch.mul(gates, 2, out=out), out=out).mul_(2).sub_(1),
        },
        device,
        args.warmup,
        max(args.repeats, 200),
    )
    print(f"\n# element-wise, a (2, {args.batch_size}, {cells}) tensor, ns per element")
    common.print_table(
        ["torch.tanh (used)", "2 sigmoid(2x) - 1 (not: its error near 0)", "speed-up"],
        [
            [
                seconds["tanh"] / gates.numel() * 1e9,
                seconds["sigmoid"] / gates.numel() * 1e9,
                f"{seconds['tanh'] / seconds['sigmoid']:.2f}x",
            ]
        ],
    )


if __name__ == "__main__":
    main()
