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
"""

import common
import torch

from maelmo_plugin.lm.modules.recurrence.cpu import packed_linear

TARGET = 0.60


def main() -> None:
    parser = common.parser(__doc__)
    common.add_size_options(parser, "512x2048", batch_size=16, sequence_length=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--matmul-size", type=int, default=2048)
    args = common.parse_with_paper_option(parser)
    device = common.setup(args)
    dim, cells = common.parse_size(args.size)
    embeddings = torch.randn(args.batch_size, args.sequence_length, dim, device=device, requires_grad=True)
    a, b = (torch.randn(args.matmul_size, args.matmul_size, device=device) for _ in range(2))
    encoders = {"encoder": common.masked_elmo_encoder(dim, cells, args.layers, device)}
    # a @ b by MKL, and by oneDNN with b packed beforehand (packed_linear computes a @ weight^T).
    matmuls = {"mm": lambda: torch.mm(a, b)}
    if device.type == "cpu":
        encoders["encoder, torch's CPU LSTM"] = common.masked_elmo_encoder(
            dim, cells, args.layers, device, False
        )
        product = packed_linear(b.t(), args.matmul_size)
        matmuls["oneDNN"] = lambda: product(a)
    # Interleaved, so that the peaks and the encoders see the same background load.
    passes = {name: common.encoder_pass(encoder, embeddings) for name, encoder in encoders.items()}
    seconds = common.interleaved({**passes, **matmuls}, device, args.warmup, args.repeats)
    tokens = args.batch_size * args.sequence_length
    flops = tokens * common.masked_elmo_training_flops_per_token(dim, cells, args.layers)
    peaks = {name: 2 * args.matmul_size**3 / seconds[name] for name in matmuls}
    peak = max(peaks.values())
    print(
        f"# encoder d={dim}, {cells} cells, {args.layers} layers, batch {args.batch_size} x {args.sequence_length}"
    )
    print(
        "# matmul peaks (GFLOP/s): " + ", ".join(f"{name} {value / 1e9:.1f}" for name, value in peaks.items())
    )
    common.print_table(
        [
            "encoder",
            "d/cells",
            "batch",
            "encoder GFLOP/s",
            f"matmul peak GFLOP/s (n={args.matmul_size})",
            "fraction",
            "target",
            "",
        ],
        [
            [
                name,
                f"{dim}/{cells}",
                args.batch_size,
                flops / seconds[name] / 1e9,
                peak / 1e9,
                f"{flops / seconds[name] / peak:.0%}",
                f"≥{TARGET:.0%}",
                common.verdict(flops / seconds[name] / peak, TARGET),
            ]
            for name in encoders
        ],
    )


if __name__ == "__main__":
    main()
