"""
What the benchmark scripts share: command-line options, timing, and model builders.

Timing rules, the same for every figure:
* every measured callable runs `warmup` times first (allocator, oneDNN/cuDNN plans, lazy state);
* the sides of a comparison are measured interleaved (A B A B ..., alternating which goes first), so a
  background job that slows the machine for a while slows both sides alike and the ratio stays honest;
* the reported time is the median of the repeats, which ignores the odd interrupted run.

Run every script pinned to one core with one thread when the machine is shared, e.g.
`OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/encoder_speed.py`.
"""

import argparse
import contextlib
import math
import os
import platform
import re
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Optional

import torch

# maelmo_plugin registers its classes with AllenNLP at import.
import maelmo_plugin  # noqa: F401
from maelmo_plugin.common.wordpiece import WordpieceVocabulary

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The workplace's data folder beside the checkout, or wherever MAELMO_SHARED_DATA says (another machine).
SHARED_DATA = os.environ.get(
    "MAELMO_SHARED_DATA", os.path.join(os.path.dirname(REPOSITORY), "shared", "data")
)
# The sample corpus and vocabulary shipped with the package: the fallback where SHARED_DATA is absent.
SAMPLE_DIR = Path(REPOSITORY) / "training_config" / "lm" / "sample"
BERT_VOCAB = os.path.join(SHARED_DATA, "vocab", "bert-base-cased-vocab.txt")
WIKITEXT2_TRAIN = os.path.join(SHARED_DATA, "wikitext-2", "train.txt")
WIKITEXT2_TEST = os.path.join(SHARED_DATA, "wikitext-2", "test.txt")
# bert-base-cased's vocabulary size, the paper's.
PAPER_VOCAB_SIZE = 28996
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


# ---------------------------------------------------------------------------------------------- options


def parser(description: str) -> argparse.ArgumentParser:
    """An argument parser with the options every script takes."""
    result = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    result.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    result.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    result.add_argument("--warmup", type=int, default=1, help="untimed runs of each side first")
    result.add_argument("--repeats", type=int, default=3, help="timed runs of each side (the median is kept)")
    result.add_argument("--seed", type=int, default=0)
    result.add_argument(
        "--tf32",
        choices=("off", "on"),
        default="off",
        help="on a GPU, TF32 for both cuBLAS's matmuls and cuDNN's recurrences (default off: full fp32 on both "
        "sides). torch's own defaults differ between the two (cuDNN on, cuBLAS off), which would pit TF32 "
        "LSTMs against fp32 transformers",
    )
    return result


def add_autocast_option(parser: argparse.ArgumentParser) -> None:
    """`--autocast bf16`, for the scripts whose timed steps run their forward passes in `autocast(...)`."""
    parser.add_argument(
        "--autocast",
        choices=("off", "bf16"),
        default="off",
        help="run the forward passes under torch.autocast in bfloat16 (mixed precision: fp32 weights and "
        "optimizer, bf16 products), as a GPU user trains",
    )


def autocast(
    args: argparse.Namespace, device: torch.device
) -> Callable[[], contextlib.AbstractContextManager]:
    """A factory of the forward passes' precision context: bf16 autocast under `--autocast bf16`, else none."""
    if getattr(args, "autocast", "off") == "off":
        return contextlib.nullcontext
    return lambda: torch.autocast(device.type, dtype=torch.bfloat16)


def add_size_options(
    parser: argparse.ArgumentParser,
    size: str,
    batch_size: int,
    sequence_length: int,
    vocab_size: bool = False,
) -> None:
    """The model and batch sizes a script measures at: `--size DxCELLS`, `--batch-size`, `--sequence-length`."""
    parser.add_argument("--size", default=size, help="d x cells")
    parser.add_argument("--batch-size", type=int, default=batch_size)
    parser.add_argument("--sequence-length", type=int, default=sequence_length)
    if vocab_size:
        parser.add_argument("--vocab-size", type=int, default=PAPER_VOCAB_SIZE)


def parse_with_paper_option(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Adds `--paper` (d=768, 4096 cells, batch 64, the paper's sizes) to `add_size_options`, and parses."""
    parser.add_argument("--paper", action="store_true", help="d=768, 4096 cells, batch 64")
    args = parser.parse_args()
    if args.paper:
        args.size, args.batch_size = "768x4096", 64
    return args


def setup(args: argparse.Namespace) -> torch.device:
    """Applies the shared options and prints the machine, so every output records where it ran."""
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    mixed = "; forward passes under bf16 autocast" if getattr(args, "autocast", "off") == "bf16" else ""
    tf32 = ""
    if device.type == "cuda":
        set_tf32(getattr(args, "tf32", "off") == "on")
        tf32 = f"; TF32 {'on' if torch.backends.cudnn.allow_tf32 else 'off'} for cuBLAS and cuDNN alike"
    print(f"# {machine_description(device)}; threads={torch.get_num_threads()}{mixed}{tf32}")
    return device


def set_tf32(enabled: bool) -> None:
    """The same TF32 setting for matmuls (cuBLAS) and recurrences and convolutions (cuDNN)."""
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled


def machine_description(device: torch.device) -> str:
    if device.type == "cuda":
        hardware = torch.cuda.get_device_name(device)
    else:
        hardware = f"{cpu_model()}, {os.cpu_count()} cores, no GPU used"
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    return f"torch {torch.__version__} on {device.type} ({hardware}); pinned to cores {affinity}"


def cpu_model() -> str:
    """The CPU's model name (what `lscpu` prints) and its widest vector unit, which a speed figure must name."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            info = cpuinfo.read()
    except OSError:
        return platform.processor() or platform.machine()
    names = [line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")]
    flags = set(info.split())
    vectors = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return f"{names[0] if names else platform.machine()}, {vectors}"


# ------------------------------------------------------------------------------------------------ corpus

# Where `wikitext_sentences` cuts with `split_at=None`: after " .", " !" or " ?", the mark kept.
SENTENCE_END = re.compile(r"(?<= [.!?]) ")


def wikitext_sentences(
    path: str,
    count: Optional[int] = None,
    *,
    split_at: Optional[str] = " . ",
    min_words: int = 1,
    period: bool = False,
    strip_lines: bool = True,
) -> list[str]:
    """
    The first `count` sentences (None: all) of a WikiText file (one paragraph a line), in corpus order: every
    line but blank ones and headings (" = Title = "), stripped (unless `strip_lines` is False), cut at
    `split_at` (None: after " .", " !" or " ?", the mark kept with its sentence); each piece of `min_words`
    words or more, and of more than periods, stripped, with " ." after it where `period`.

    The scripts' readers, which differed, are these settings, and give the sentences they gave:
    `embedding_storage.py`, the defaults; `onnx_parity.py` (and the scripts that read as it does),
    `split_at=None, min_words=3`; `bulk_embedding.py`, `period=True` (a line's last sentence ends " . ."); and
    `representations.py`, `min_words=3, period=True, strip_lines=False` (a line's final " . " is a cut too).
    """
    found: list[str] = []
    with open(path, encoding="utf-8") as corpus:
        for line in corpus:
            if not line.strip() or line.lstrip().startswith("="):
                continue
            text = line.strip() if strip_lines else line
            for piece in SENTENCE_END.split(text) if split_at is None else text.split(split_at):
                if len(piece.split()) >= min_words and piece.strip(" ."):
                    found.append(piece.strip() + (" ." if period else ""))
                    if count is not None and len(found) == count:
                        return found
    return found


# ----------------------------------------------------------------------------------------------- timing


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(function: Callable[[], object], device: torch.device) -> float:
    """Wall-clock seconds of one call, with the device's queued work included."""
    synchronize(device)
    start = time.perf_counter()
    function()
    synchronize(device)
    return time.perf_counter() - start


def interleaved(
    functions: dict[str, Callable[[], object]], device: torch.device, warmup: int, repeats: int
) -> dict[str, float]:
    """The median seconds per call of each function, measured in alternating order (see module docstring)."""
    for function in functions.values():
        for _ in range(warmup):
            function()
    times: dict[str, list[float]] = {name: [] for name in functions}
    names = list(functions)
    for repeat in range(repeats):
        # Alternating who goes first cancels a steady drift (thermal, a job starting) between the sides.
        for name in names if repeat % 2 == 0 else reversed(names):
            times[name].append(timed(functions[name], device))
    return {name: statistics.median(values) for name, values in times.items()}


# ------------------------------------------------------------------------------------------------ models


def vocabulary(vocab_size: int, vocab_file: Optional[str] = None):
    """
    A word-piece `Vocabulary` as the configs build it: from `vocab_file` (e.g. bert-base-cased), or, when
    it is absent or of another size, synthetic entries after the 5 special tokens (only the size matters
    for speed).
    """
    if vocab_file and os.path.exists(vocab_file):
        vocab = WordpieceVocabulary.from_wordpiece_vocab(vocab_file)
        if vocab.get_vocab_size("wordpieces") == vocab_size:
            return vocab
    vocab = WordpieceVocabulary(non_padded_namespaces=["wordpieces"])
    for entry in SPECIAL_TOKENS + [f"piece{i}" for i in range(vocab_size - len(SPECIAL_TOKENS))]:
        vocab.add_token_to_namespace(entry, "wordpieces")
    return vocab


def masked_elmo_lm(
    vocab_size: int,
    dim: int,
    cells: int,
    layers: int = 2,
    num_mask_sets: int = 1,
    mask_accumulation: str = "batched",
    dropout: float = 0.1,
    cpu_recurrence: bool = True,
    cuda_graphs: bool = True,  # the benchmarks time the graphed update; an eager row beside it
):
    """
    A `maelmo_masked_elmo_lm` as `training_config/pretrain.jsonnet` builds it, at the given sizes
    (`cpu_recurrence=False`: with torch's own CPU LSTM; `cuda_graphs=False`: every LSTM call eager on a GPU).
    """
    from maelmo_plugin.lm.models.masked_elmo_lm import MaskedElmoLanguageModel
    from maelmo_plugin.lm.modules.masked_elmo_encoder import MaskedElmoEncoder

    return MaskedElmoLanguageModel(
        vocabulary(vocab_size, BERT_VOCAB),
        MaskedElmoEncoder(
            input_dim=dim,
            cells=cells,
            num_layers=layers,
            dropout=dropout,
            cpu_recurrence=cpu_recurrence,
            cuda_graphs=cuda_graphs,
        ),
        num_mask_sets=num_mask_sets,
        mask_accumulation=mask_accumulation,
    )


def token_batch(vocab_size: int, batch_size: int, sequence_length: int, device: torch.device) -> torch.Tensor:
    """Random non-special word-piece ids, shape (batch_size, sequence_length)."""
    return torch.randint(len(SPECIAL_TOKENS), vocab_size, (batch_size, sequence_length), device=device)


def model_inputs(token_ids: torch.Tensor, mask_pass: Optional[int] = None) -> dict:
    """The `maelmo_btbptt` loader's batch layout, with `reset_states` so that the model runs stateful."""
    batch = {
        "tokens": {"tokens": {"tokens": token_ids}},
        "reset_states": torch.zeros(token_ids.size(0), dtype=torch.bool, device=token_ids.device),
    }
    if mask_pass is not None:
        batch["mask_pass"] = mask_pass
    return batch


def adam_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    losses: Callable[[], Iterator[torch.Tensor]],
    forward_context: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
):
    """
    One update as AllenNLP's trainer makes it: backward on each loss (several for gradient accumulation,
    each divided by their number), gradient-norm clipping at 5 (the configs' `grad_norm`), Adam. Each loss is
    computed inside `forward_context` (autocast, as AllenNLP's `use_amp` does) and its backward outside it.
    """
    optimizer.zero_grad(set_to_none=True)
    count = 0
    pending = losses()
    while True:
        with forward_context():
            loss = next(pending, None)
        if loss is None:
            break
        loss.backward()
        count += 1
    torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    optimizer.step()
    return count


def count_parameters(module: torch.nn.Module) -> int:
    return sum(parameter.numel() for parameter in module.parameters())


# ----------------------------------------------------------------------------------------------- output


def print_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A Markdown table, as docs/benchmarks.md draws it from the script's record (`write_record`)."""
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(_cell(value) for value in row) + " |")


def write_record(
    path: str,
    title: str,
    machine: str,
    header: Sequence[str],
    rows: Sequence[Sequence[object]],
    data: Optional[dict] = None,
    notes: str = "",
    computed: Optional[list[dict]] = None,
    command: Optional[str] = None,
) -> None:
    """
    A benchmark's record, from which docs/benchmarks.md is drawn: the table as printed (cells as text), the
    command that made it, the machine, the commit and the date, and the raw figures (`data`). `computed` lists
    the ratios of two of the table's own figures that the pages compute (draw_records.py: a guide quotes such a
    ratio without it being typed into the table). `command`: the commands that made it, one a line, where
    another command than this one made part of it (default: this one). Written beside, then moved into place.
    """
    import json

    record = {
        "title": title,
        "command": command or this_command(),
        "machine": machine,
        "commit": current_commit(),
        "date": today(),
        "header": list(header),
        "rows": [[_cell(value) for value in row] for row in rows],
        "notes": notes,
        "data": data or {},
    }
    if computed:
        record["computed"] = list(computed)
    with open(path + ".partial", "w", encoding="utf-8") as stream:
        json.dump(record, stream, indent=1, ensure_ascii=False)
        stream.write("\n")
    os.replace(path + ".partial", path)


def current_commit() -> str:
    """The checkout's commit, short."""
    import subprocess

    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPOSITORY, capture_output=True, text=True
    ).stdout.strip()


def today() -> str:
    import datetime

    return datetime.date.today().isoformat()


def this_command() -> str:
    """This invocation's command line, the script's path from the repository's root."""
    import sys

    return " ".join([os.path.relpath(sys.argv[0], REPOSITORY), *sys.argv[1:]])


def significant(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant figures, or all its integer digits: 80.7, 148, 1,234 (digits=3)."""
    if abs(value) >= 10 ** (digits - 1):
        return f"{value:,.0f}"
    rounded = float(f"{value:.{digits}g}")
    if rounded == 0 or not math.isfinite(rounded):
        return f"{rounded:.0f}"
    decimals = max(digits - 1 - math.floor(math.log10(abs(rounded))), 0)
    return f"{rounded:,.{decimals}f}"


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def verdict(ratio: float, target: float, higher_is_better: bool = True) -> str:
    met = ratio >= target if higher_is_better else ratio <= target
    return "met" if met else "not met"


# ------------------------------------------------------------------------------------------------- FLOPs


def lstm_direction_flops(input_size: int, projection: int, cells: int) -> int:
    """
    Forward FLOPs of one token through one direction of an LSTM with a projected state: the four gates'
    input and recurrent matmuls, 2 * 4 * cells * (input + projection), plus the projection of the cell
    output, 2 * cells * projection. Element-wise gate arithmetic (about 10 * cells) is left out: it is
    under 1% at these sizes and runs at memory speed, not matmul speed.
    """
    return 2 * 4 * cells * (input_size + projection) + 2 * cells * projection


def masked_elmo_training_flops_per_token(dim: int, cells: int, layers: int) -> int:
    """
    Forward + backward FLOPs per token of the Masked ELMo encoder: every layer reads d and each of its two
    directions projects to d/2; the backward pass costs twice the forward (gradients of the inputs and of
    the weights), hence x3.
    """
    return 3 * layers * 2 * lstm_direction_flops(dim, dim // 2, cells)


def elmo_lstm_training_flops_per_token(input_size: int, projection: int, cells: int, layers: int) -> int:
    """The same for AllenNLP's ElmoLstm: two independent stacks, layers above the first read `projection`."""
    per_direction = lstm_direction_flops(input_size, projection, cells) + (layers - 1) * lstm_direction_flops(
        projection, projection, cells
    )
    return 3 * 2 * per_direction


# ------------------------------------------------------------------------------------------------ encoder


def parse_size(text: str):
    """ "512x2048" -> (512, 2048): d and cells."""
    dim, cells = text.lower().split("x")
    return int(dim), int(cells)


def masked_elmo_encoder(dim: int, cells: int, layers: int, device: torch.device, cpu_recurrence: bool = True):
    """The encoder as the configs build it; `cpu_recurrence=False` runs torch's own CPU LSTM instead."""
    from maelmo_plugin.lm.modules.masked_elmo_encoder import MaskedElmoEncoder

    return (
        MaskedElmoEncoder(input_dim=dim, cells=cells, num_layers=layers, cpu_recurrence=cpu_recurrence)
        .to(device)
        .train()
    )


def encoder_pass(encoder: torch.nn.Module, embeddings: torch.Tensor) -> Callable[[], None]:
    """Forward and backward through the Masked ELMo encoder (the top layer's sum stands in for a loss)."""

    def run() -> None:
        encoder.zero_grad(set_to_none=True)
        representations, _ = encoder(embeddings)
        representations[-1].sum().backward()

    return run


# ------------------------------------------------------------------------------------------ training step


def masked_lm_step(
    model: torch.nn.Module,
    token_ids: torch.Tensor,
    forward_context: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
) -> Callable[[], None]:
    """One `maelmo_masked_elmo_lm` update with Adam (k = the model's num_mask_sets, batched or sequential)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    passes = model._num_mask_sets if model._mask_accumulation == "sequential" else 1

    def losses():
        for mask_pass in range(passes):
            # AllenNLP's trainer divides each accumulated loss by the number of accumulation steps.
            yield model(**model_inputs(token_ids, mask_pass if passes > 1 else None))["loss"] / passes

    return lambda: adam_step(model, optimizer, losses, forward_context)


def non_embedding_parameters(model: torch.nn.Module) -> int:
    """Parameters outside vocabulary- and position-sized tables (embeddings, tied softmax and its bias)."""
    return sum(
        parameter.numel()
        for name, parameter in model.named_parameters()
        if not any(part in name for part in ("embedding", "_output_bias", "predictions.bias", "decoder.bias"))
    )
