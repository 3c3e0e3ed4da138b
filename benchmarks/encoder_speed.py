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
"""

import common
import torch
from allennlp.modules.elmo_lstm import ElmoLstm

TARGET = 2.5


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


def measure(args, device, dim: int, cells: int, batch_size: int):
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
        torch_lstm = [tokens / seconds["torch_lstm"], f"{seconds['elmo_lstm'] / seconds['torch_lstm']:.2f}x"]
    else:  # on a GPU the encoder runs torch's cuDNN LSTM itself: there is no CPU recurrence to set it against
        torch_lstm = ["–", "–"]
    return [
        f"{dim}/{cells}",
        batch_size,
        tokens / seconds["masked_elmo"],
        torch_lstm[0],
        tokens / seconds["elmo_lstm"],
        torch_lstm[1],
        f"{speedup:.2f}x",
        f"{speedup * ours / theirs:.2f}x",
        f"≥{TARGET}x",
        common.verdict(speedup, TARGET),
    ]


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--sizes", nargs="+", default=["512x2048"], help="d x cells, e.g. 512x2048 768x4096")
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[16])
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument(
        "--all", action="store_true", help="the full grid: 512x2048 and 768x4096, batches 16 and 64"
    )
    args = parser.parse_args()
    if args.all:
        args.sizes, args.batch_sizes = ["512x2048", "768x4096"], [16, 64]
    device = common.setup(args)
    rows = [
        measure(args, device, *common.parse_size(size), batch_size)
        for size in args.sizes
        for batch_size in args.batch_sizes
    ]
    print(
        f"# sequence {args.sequence_length}, {args.layers} layers, forward + backward, median of {args.repeats}"
    )
    common.print_table(
        [
            "d/cells",
            "batch",
            "Masked ELMo tok/s",
            "same, torch's CPU LSTM tok/s",
            "ElmoLstm tok/s",
            "speed-up with torch's CPU LSTM",
            "speed-up",
            "per FLOP",
            "target",
            "",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
