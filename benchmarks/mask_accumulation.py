"""
Figure 4: the cost of one update with k=4 mask accumulation (paper 3.1) against one plain k=1 update,
for both ways the model runs it (see `MaskedElmoLanguageModel`'s docstring):

* `batched`: the 4 masked copies of the batch as one batch of 4 x batch_size rows;
* `sequential`: 4 forward/backward passes of batch_size rows, gradients averaged, one Adam step.

An update with k=4 predicts 4 times as many masked tokens, so 4x is the naive cost; the target is that
batched costs at most 3x. The defaults are the CPU-size config's (`pretrain_small.jsonnet`: d=128, 512
cells, batch 32, 64-token windows) with the bert-base-cased vocabulary size.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/mask_accumulation.py [--paper] \
        [--record benchmarks/results/records/mask_accumulation.json]

`--record` writes the CPU record the guides cite (its title, header and row names are the ones they name).
"""

import common
import torch

TARGET = 3.0
K = 4


def main() -> None:
    parser = common.parser(__doc__)
    common.add_size_options(parser, "128x512", batch_size=32, sequence_length=64, vocab_size=True)
    parser.add_argument(
        "--paper", action="store_true", help="d=768, 4096 cells, batch 64 x 128 (long on a CPU core)"
    )
    parser.add_argument("--record", help="write the record here (at the CPU size, on a CPU)")
    parser.set_defaults(repeats=5)
    args = parser.parse_args()
    if args.paper:
        args.size, args.batch_size, args.sequence_length = "768x4096", 64, 128
    device = common.setup(args)
    dim, cells = common.parse_size(args.size)
    token_ids = common.token_batch(args.vocab_size, args.batch_size, args.sequence_length, device)
    settings = {
        "k=1": (1, "batched"),
        f"k={K} batched": (K, "batched"),
        f"k={K} sequential": (K, "sequential"),
    }
    steps = {}
    for name, (k, mode) in settings.items():
        model = common.masked_elmo_lm(args.vocab_size, dim, cells, num_mask_sets=k, mask_accumulation=mode)
        steps[name] = common.masked_lm_step(model.to(device).train(), token_ids)
    # On a model of its own, since the updates above reset their models' gradients.
    steps["shared"] = shared_part(common.masked_elmo_lm(args.vocab_size, dim, cells).to(device))
    seconds = common.interleaved(steps, device, args.warmup, args.repeats)
    shared = seconds.pop("shared")
    print(
        f"# d={dim}, {cells} cells, batch {args.batch_size} x {args.sequence_length}, vocabulary {args.vocab_size}"
    )
    rows = []
    for name, value in seconds.items():
        ratio = value / seconds["k=1"]
        is_target = name == f"k={K} batched"
        masked_tokens_ratio = settings[name][0] / ratio
        rows.append(
            [
                name,
                value,
                f"{ratio:.2f}x",
                f"{masked_tokens_ratio:.2f}x",
                f"≤{TARGET}x" if is_target else "–",
                common.verdict(ratio, TARGET, higher_is_better=False) if is_target else "",
            ]
        )
    header = ["update", "seconds", "cost vs k=1", "masked tokens/s vs k=1", "target", ""]
    common.print_table(header, rows)
    # Each masked copy is its own input to both LSTM directions, and predicts its own masked tokens, so
    # only the parameter update is shared between the k passes.
    floor = K - (K - 1) * shared / seconds["k=1"]
    print(
        f"\n# The part of an update that k=4 does once (gradient clipping + Adam): {shared:.3f} s, "
        f"{shared / seconds['k=1']:.0%} of a k=1 update. At k=1's efficiency, k=4 would cost {floor:.2f}x; "
        f"a lower cost can only come from larger products running faster, or from per-call overheads."
    )
    if args.record:
        if device.type != "cpu" or args.paper:
            raise SystemExit(
                "--record writes the CPU record, at the CPU size: run it on a CPU without --paper"
            )
        common.write_record(
            args.record,
            "Mask accumulation, k=4 against k=1, CPU",
            f"{common.machine_description(device)}; {args.threads} torch thread(s)",
            header,
            rows,
            data={"seconds": seconds, "shared_seconds": shared, "floor": floor},
            notes=(
                f"The CPU config's size (d={dim}, {cells} cells, batch {args.batch_size} x "
                f"{args.sequence_length}), vocabulary {args.vocab_size:,}, median of {args.repeats} after "
                f"{args.warmup} warm-up, the updates interleaved. Only clipping and Adam "
                f"({shared / seconds['k=1']:.0%} of a k=1 update) are shared, so k=4 at k=1's efficiency costs "
                f"{floor:.2f}x: on a CPU already busy at k=1, batching the copies cannot beat that."
            ),
        )


def shared_part(model) -> callable:
    """Gradient clipping and one Adam step, with the gradients already in place: what k passes share."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for parameter in model.parameters():
        parameter.grad = torch.randn_like(parameter) * 1e-3

    def run() -> None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()

    return run


if __name__ == "__main__":
    main()
