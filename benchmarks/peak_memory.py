"""
Figure 6: peak memory of a paper-size Masked ELMo training step (d=768, 2 layers of 4096 cells, vocabulary
28,996, batch 64 x 128, k=1, Adam) against the analytic minimum. Target: at most 2x.

The steps run in a fresh subprocess. On a CPU the measure is the peak resident set size (`ru_maxrss`)
minus the resident size after the imports, before the model is built, so that it counts everything
training allocates; on a GPU it is `torch.cuda.max_memory_allocated`. Two updates run, so that the
second holds Adam's moments while its activations are alive, as every update of a run does.

The analytic minimum, in float32 (4 bytes), with P the parameters, N = batch x sequence tokens, d, c
cells, L layers, V the vocabulary and m = 0.15 the masked fraction:

    4 P (parameters + gradients + Adam's 2 moments)
  + N x [ d                                  the embeddings, the first layer's input
          + L x ( 2 d                        each layer's (dropped-out) input and LayerNorm output
                  + 2 x (4c + c + c + d/2) )  per direction and step: the 4 gates, the cell state, the
                                             cell output before the projection, the projected state
          + m (d + V) ]                      the top states and softmax at the masked positions
  x 4 bytes

At the paper's size that is 1.66 GB of parameter state and 3.54 GB of activations.

Two kernels are measured, each in its own fresh subprocess, one after the other: the project's CPU recurrence
(the configs' default) and torch's CPU LSTM (`cpu_recurrence=False`, about twice as slow); `--kernels`
chooses. On a GPU there is only cuDNN's (the first row).

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/peak_memory.py \
        [--record benchmarks/results/records/peak_memory.json]
    ... benchmarks/peak_memory.py --size 256x1024 --batch-size 16      # a quick check of the script

`--record FILE` writes the CPU record the guides cite (its title, header and row names are the ones they name),
both kernels from one invocation.
"""

import argparse
import json
import os
import resource
import subprocess
import sys

import common
import core_load

TARGET = 2.0
MASKED_FRACTION = 0.15
BYTES = 4
GB = 1e9
# The record's rows, by kernel: the guides cite the first ("peak_memory: the CPU recurrence > ratio"). The
# second keeps the name it had when it was measured before the first; it is measured here too.
KERNELS = {"cpu": "the CPU recurrence", "torch": "torch's CPU LSTM"}


def analytic_minimum(parameters: int, tokens: int, dim: int, cells: int, layers: int, vocab_size: int):
    """(parameter-state bytes, activation bytes), the module docstring's formula."""
    per_direction = 4 * cells + cells + cells + dim // 2
    per_token = dim + layers * (2 * dim + 2 * per_direction) + MASKED_FRACTION * (dim + vocab_size)
    return 4 * parameters * BYTES, tokens * per_token * BYTES


def current_rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(args) -> None:
    """Runs in the fresh subprocess: builds, trains `--steps` updates, prints the measures as JSON."""
    import torch

    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    baseline = current_rss()
    dim, cells = common.parse_size(args.size)
    model = common.masked_elmo_lm(
        args.vocab_size, dim, cells, num_mask_sets=args.mask_sets, cpu_recurrence=args.kernel == "cpu"
    )
    model = model.to(device).train()
    token_ids = common.token_batch(args.vocab_size, args.batch_size, args.sequence_length, device)
    step = common.masked_lm_step(model, token_ids)
    for _ in range(args.steps):
        step()
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated(device)
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - baseline  # ru_maxrss is in KiB
    print(json.dumps({"peak": peak, "parameters": common.count_parameters(model), "baseline": baseline}))


def measure(kernel: str) -> dict:
    """The child's measures (`child`) for `kernel`, in a fresh subprocess with this invocation's options."""
    command = [sys.executable, __file__, "--child", "--kernel", kernel, *sys.argv[1:]]
    completed = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = common.parser(__doc__)
    common.add_size_options(parser, "768x4096", batch_size=64, sequence_length=128, vocab_size=True)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--mask-sets", type=int, default=1, help="k (batched): activations grow k-fold")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument(
        "--kernels",
        nargs="+",
        choices=tuple(KERNELS),
        default=None,
        help="cpu: the CPU recurrence, torch: torch's CPU LSTM (default: both on a CPU, the GPU's on a GPU)",
    )
    parser.add_argument("--record", help="write the CPU record here (both kernels, on a CPU)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kernel", choices=tuple(KERNELS), default="cpu", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    on_gpu = args.device.startswith("cuda")
    kernels = args.kernels or (["cpu"] if on_gpu else list(KERNELS))
    if args.record and (on_gpu or kernels != list(KERNELS)):
        raise SystemExit("--record writes the CPU record: on a CPU, with both kernels")
    device = common.setup(args)
    use = core_load.CoreUse().start()
    results = {kernel: measure(kernel) for kernel in kernels}
    use.stop()
    dim, cells = common.parse_size(args.size)
    tokens = args.mask_sets * args.batch_size * args.sequence_length
    parameters = results[kernels[0]]["parameters"]
    state, activations = analytic_minimum(parameters, tokens, dim, cells, args.layers, args.vocab_size)
    measure_name = "max_memory_allocated" if on_gpu else "peak RSS - RSS after imports"
    print(
        f"# d={dim}, {cells} cells, {args.layers} layers, vocabulary {args.vocab_size}, batch {args.batch_size} x "
        f"{args.sequence_length}, k={args.mask_sets}, {parameters / 1e6:.1f}M parameters, {args.steps} Adam "
        f"updates; measure: {measure_name}"
    )
    header = [
        "kernel",
        "parameter state GB",
        "activations GB",
        "analytic minimum GB",
        "measured peak GB",
        "ratio",
        "target",
        "",
    ]
    rows = []
    for kernel, result in results.items():
        ratio = result["peak"] / (state + activations)
        rows.append(
            [
                KERNELS[kernel] if not on_gpu else "cuDNN",
                state / GB,
                activations / GB,
                (state + activations) / GB,
                result["peak"] / GB,
                f"{ratio:.2f}x",
                f"≤{TARGET:.0f}x",
                common.verdict(ratio, TARGET, higher_is_better=False),
            ]
        )
    common.print_table(header, rows)
    if args.record:
        common.write_record(
            args.record,
            "Peak memory of a paper-size pre-training step, CPU",
            f"{common.machine_description(device)}; {args.threads} torch thread(s); other cores: "
            f"{use.describe() or '?'}",
            header,
            rows,
            data={
                "peak_bytes": {kernel: result["peak"] for kernel, result in results.items()},
                "rss_after_imports_bytes": {kernel: result["baseline"] for kernel, result in results.items()},
                "parameters": parameters,
                "parameter_state_bytes": state,
                "activation_bytes": activations,
            },
            notes=(
                f"d={dim}, {cells} cells, {args.layers} layers, {parameters / 1e6:.1f}M parameters, vocabulary "
                f"{args.vocab_size:,}, batch {args.batch_size} x {args.sequence_length}, {args.steps} Adam "
                f"updates in a fresh subprocess per kernel, the kernels one after the other; peak RSS minus "
                f"the RSS after the imports. k={args.mask_sets}: k=4 batched mask accumulation grows the "
                "activations about 4-fold, which sequential accumulation avoids."
            ),
        )


if __name__ == "__main__":
    main()
