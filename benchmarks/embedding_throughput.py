"""
Embedding throughput on one CPU core, in sentences/s: this plugin (`MaskedElmo.embed` in fp32, int8, and
bf16 where the CPU has native bfloat16; its ONNX export in ONNX Runtime, fp32 and int8) against AllenNLP's `Elmo`
(the original 2 x 4096 / 512 options) and Flair's `FlairEmbeddings` (a forward and a backward character
language model of Flair's default size: one LSTM layer of 2048, characters of 100), at the paper's size
(d 768, 4096 cells) and the small size (d 128, 512 cells: training_config/lm/pretrain_small.jsonnet),
batch 1 and 32. Weights are random everywhere: the speed does not depend on them.

Every side of a batch size is timed in the same invocation, interleaved (`common.interleaved`), on the same
sentences (WikiText-2's test split's first, 3 words or more) in the same batches: sorted by length in
characters, so that no side pads more than another. Each side returns what its users get: the plugin and
ONNX Runtime all L + 1 layers per word-piece (the plugin as numpy arrays, one per sentence), `Elmo` its
scalar mix per word, Flair the two language models' states per word.

Flair is no dependency of the plugin: install it beside, for this script only (nothing is downloaded at
run time: its language models are built here, with a character dictionary of its size):

    pip install --no-deps --target /tmp/flair flair==0.15.1 deprecated segtok lxml bioc gdown \\
        beautifulsoup4 soupsieve transformer-smaller-training-vocab
    PYTHONPATH=/tmp/flair OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 \\
        .venv/bin/python benchmarks/embedding_throughput.py

Without Flair the script leaves its rows out and says so; ONNX Runtime needs the `onnx` extra.

With `--device cuda` the same sentences are embedded on a GPU: the plugin (cuDNN's LSTM) in fp32 and in fp32
under bf16 autocast, against `Elmo` on the same GPU; ONNX Runtime, int8 and the CPU targets are left out.

`--record FILE` writes the record of CPUs with native bfloat16 (embedding_throughput_avx512.json): on a CPU with
AVX512_BF16 but no AMX, its EPYC columns (every side but ONNX Runtime's int8, 4 sentences at batch 1, 32 at
batch 32; about 5 minutes on one core); on one with AMX, its Xeon columns (the plugin's rows at the paper's
size, 8 and 64 sentences). The other CPU's columns are kept from FILE as it was, with where they come from:

    PYTHONPATH=/tmp/flair OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python \\
        benchmarks/embedding_throughput.py --record benchmarks/results/records/embedding_throughput_avx512.json
"""

import importlib.util
import json
import os
import tempfile
from collections.abc import Callable

import common
import core_load
import numpy
import torch
from allennlp.models.archival import load_archive
from embedding_baselines import allennlp_elmo, flair_embeddings
from onnx_parity import sentences
from representations import make_archive

from maelmo_plugin.api import MaskedElmo
from maelmo_plugin.hf.export import _wordpiece_tokenizer
from maelmo_plugin.lm.modules.recurrence.reduced_precision import native_bf16

SIZES = {"paper": (768, 4096), "small": (128, 512)}
ELMO, FLAIR = "AllenNLP Elmo 2x4096/512", "Flair forward + backward"
CPU_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
# The record of CPUs with native bfloat16: its columns by the CPU that measures them, and each one's grid.
TITLE = "Embedding on CPUs with VNNI and native bfloat16 (AVX-512 EPYC, AMX Xeon)"
COLUMNS = {
    "EPYC": ["batch 1 (EPYC, AVX512_BF16)", "batch 1 vs `Elmo`", "batch 32 (EPYC)", "batch 32 vs `Elmo`"],
    "Xeon": ["batch 1 (Xeon, AMX)", "batch 32 (Xeon, AMX)"],
}
GRIDS = {  # sizes, baselines, ONNX Runtime, sentences at batch 32 and at batch 1
    "EPYC": (["paper", "small"], True, True, 32, 4),
    "Xeon": (["paper"], False, False, 64, 8),
}
# (the record's row, this script's side)
RECORD_ROWS = [("AllenNLP `Elmo` 2 x 4096 / 512", ELMO), (FLAIR, FLAIR)] + [
    (f"plugin {label}{side}", f"plugin {size}{side.replace(',', '')}")
    for size, label in (("paper", "768/4096"), ("small", "128/512"))
    for side in (" fp32", " int8", " bf16", ", ONNX Runtime fp32")
]
COMPUTED = [
    {
        "row": f"{precision} over fp32, 768/4096",
        "ratio": [f"plugin 768/4096 {precision}", "plugin 768/4096 fp32"],
        "columns": [COLUMNS["EPYC"][0], COLUMNS["EPYC"][2], *COLUMNS["Xeon"]],
    }
    for precision in ("int8", "bf16")
]
ELMO_TARGET = 6.0  # the issue's: the best side at the paper's size, 6x `Elmo` (bold where met)

Embed = Callable[[list[str]], object]


def plugin_sides(
    directory: str, size: str, precisions: list[str], onnx: list[str], device: torch.device
) -> dict[str, Embed]:
    """
    `MaskedElmo.embed` at each precision, and the ONNX export in ONNX Runtime, of one random model; on a GPU,
    fp32 and fp32 under bf16 autocast.
    """
    dim, cells = SIZES[size]
    archive_file = make_archive(directory, common.BERT_VOCAB, dim, cells)
    elmo = MaskedElmo.from_archive(
        archive_file, cuda_device=(device.index or 0) if device.type == "cuda" else -1
    )
    sides: dict[str, Embed] = {
        f"plugin {size} {precision}": (
            lambda batch, precision=precision: elmo.embed(batch, batch_size=len(batch), precision=precision)
        )
        for precision in precisions
    }
    if device.type == "cuda":

        def bf16_autocast(batch: list[str]):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                return elmo.embed(batch, batch_size=len(batch))

        sides[f"plugin {size} fp32 + bf16 autocast"] = bf16_autocast
    if onnx:
        for precision, embed in onnx_sides(directory, archive_file, onnx).items():
            sides[f"plugin {size} ONNX Runtime {precision}"] = embed
    return sides


def onnx_sides(directory: str, archive_file: str, precisions: list[str]) -> dict[str, Embed]:
    """
    The export (with `--quantize int8` for "int8") in its documented use (docs/onnx.md): its tokenizer.json,
    then a session of model.onnx ("fp32") or model_int8.onnx ("int8"), one thread.
    """
    from tokenizers import Tokenizer

    from maelmo_plugin.onnx.export import MODEL_FILE, onnx_session, write_onnx_export
    from maelmo_plugin.onnx.quantize import INT8_MODEL_FILE

    archive = load_archive(archive_file)
    export = os.path.join(directory, "onnx")
    os.makedirs(export)
    wordpieces = _wordpiece_tokenizer(archive, archive_file)
    write_onnx_export(export, archive.model, wordpieces, quantize="int8" if "int8" in precisions else None)
    tokenizer = Tokenizer.from_file(os.path.join(export, "tokenizer.json"))

    def side(model_file: str) -> Embed:
        session = onnx_session(export, threads=torch.get_num_threads(), model_file=model_file)

        def embed(batch: list[str]):
            encodings = tokenizer.encode_batch(batch)
            inputs = {
                "input_ids": numpy.array([encoding.ids for encoding in encodings], dtype=numpy.int64),
                "attention_mask": numpy.array([e.attention_mask for e in encodings], dtype=numpy.int64),
            }
            return session.run(["hidden_states"], inputs)[0]

        return embed

    files = {"fp32": MODEL_FILE, "int8": INT8_MODEL_FILE}
    return {precision: side(files[precision]) for precision in precisions}


def throughput(embed: Embed, texts: list[str], batch_size: int) -> Callable[[], None]:
    """One pass over `texts` in batches of `batch_size`."""
    batches = [texts[start : start + batch_size] for start in range(0, len(texts), batch_size)]

    def run() -> None:
        for batch in batches:
            embed(batch)

    return run


def flag_set() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            return set(cpuinfo.read().split())
    except OSError:
        return set()


def cpu_flags() -> str:
    flags = flag_set()
    return (
        ", ".join(f"{flag} {'yes' if flag in flags else 'no'}" for flag in CPU_FLAGS) if flags else "unknown"
    )


def main() -> None:
    parser = common.parser(__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", choices=sorted(SIZES), help="default: paper small")
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 32])
    parser.add_argument("--sentences", type=int, help="sentences per pass at batch > 1 (default 64)")
    parser.add_argument("--sentences-batch-1", type=int, help="sentences per pass at batch 1 (default 8)")
    parser.add_argument("--no-onnx", action="store_true")
    parser.add_argument("--no-baselines", action="store_true", help="the plugin's sides only")
    parser.add_argument(
        "--record", help="measure this CPU's columns of embedding_throughput_avx512.json and write it here"
    )
    args = parser.parse_args()
    group = record_grid(args, parser) if args.record else None
    args.sizes = args.sizes or ["paper", "small"]
    args.sentences, args.sentences_batch_1 = args.sentences or 64, args.sentences_batch_1 or 8
    device = common.setup(args)
    print(f"# CPU flags: {cpu_flags()}; torch's CPU capability {torch.backends.cpu.get_cpu_capability()}")
    gpu = device.type == "cuda"
    precisions = ["fp32"] if gpu else ["fp32", "int8"] + (["bf16"] if native_bf16() else [])
    if not gpu and "bf16" not in precisions:
        print("# bf16: not measured, this CPU has no native bfloat16 (AVX512_BF16 or AMX)")
    onnx = [] if gpu or args.no_onnx or importlib.util.find_spec("onnxruntime") is None else ["fp32", "int8"]
    if group:  # the record leaves ONNX Runtime's int8 out: its kernels on VNNI were not checked
        onnx = onnx[:1]
    flair_missing, use = None, core_load.CoreUse().start()
    with tempfile.TemporaryDirectory() as directory:
        sides: dict[str, Embed] = {}
        if not args.no_baselines:
            sides[ELMO] = allennlp_elmo(os.path.join(directory, "elmo"), device)
            if gpu:
                print("# Flair: CPU rows only")
            elif importlib.util.find_spec("flair") is not None:
                sides[FLAIR] = flair_embeddings()
            else:
                flair_missing = "Flair is not installed (see the script's docstring)"
                print(f"# {flair_missing}: its rows are left out")
        for size in args.sizes:
            os.makedirs(os.path.join(directory, size))
            sides.update(plugin_sides(os.path.join(directory, size), size, precisions, onnx, device))
        rows, targets, rates, words = [], [], {}, {}
        for batch_size in args.batch_sizes:
            count = args.sentences_batch_1 if batch_size == 1 else args.sentences
            texts = sorted(sentences(common.WIKITEXT2_TEST, count), key=len)
            runs = {name: throughput(embed, texts, batch_size) for name, embed in sides.items()}
            seconds = common.interleaved(runs, device, args.warmup, args.repeats)
            rate = rates[batch_size] = {name: count / seconds[name] for name in sides}
            words[batch_size] = (count, sum(len(text.split()) for text in texts) / count)
            print(
                f"# batch {batch_size}: {count} sentences, {words[batch_size][1]:.1f} words each on average"
            )
            for name in sides:
                size = name.split()[1] if name.startswith("plugin") else None
                rows.append(
                    [
                        name,
                        batch_size,
                        rate[name],
                        _ratio(rate, name, ELMO),
                        _ratio(rate, name, FLAIR),
                        _ratio(rate, name, f"plugin {size} fp32") if size else "-",
                    ]
                )
            if not gpu:  # the targets are about CPUs
                targets.extend(_targets(rate, batch_size, args.sizes))
    use.stop()
    print(f"# median of {args.repeats} after {args.warmup} warm-up; all weights random")
    common.print_table(["side", "batch", "sentences/s", "vs Elmo", "vs Flair", "vs plugin fp32"], rows)
    if targets:
        print()
        common.print_table(["size", "batch", "target", "measured", ""], targets)
    if group:
        print()
        use.warn_if_busy("measured")
        write_avx512_record(args, group, device, use, rates, words, flair_missing)


def _ratio(rate: dict[str, float], name: str, baseline: str) -> str:
    return f"{rate[name] / rate[baseline]:.2f}x" if baseline in rate else "-"


def _targets(rate: dict[str, float], batch_size: int, sizes: list[str]) -> list[list]:
    """The issue's targets, as ratios of this batch size's rates, for each size of the plugin."""
    rows = []
    for size in sizes:
        prefix = f"plugin {size} "
        fp32, onnx, onnx_int8 = prefix + "fp32", prefix + "ONNX Runtime fp32", prefix + "ONNX Runtime int8"
        best = max((name for name in rate if name.startswith(prefix)), key=rate.__getitem__)
        label = f"best ({best[len(prefix) :]})"
        checks = [
            ("fp32 >= 3x Elmo", fp32, ELMO, 3.0),
            (f"{label} >= 6x Elmo", best, ELMO, 6.0),
            (f"{label} >= 3x Flair", best, FLAIR, 3.0),
            ("ONNX Runtime fp32 >= plugin fp32", onnx, fp32, 1.0),
            ("ONNX Runtime int8 >= plugin fp32", onnx_int8, fp32, 1.0),
        ]
        for target, name, baseline, needed in checks:
            if name in rate and baseline in rate:
                ratio = rate[name] / rate[baseline]
                rows.append([size, batch_size, target, f"{ratio:.2f}x", common.verdict(ratio, needed)])
    return rows


def record_grid(args, parser) -> str:
    """The record's columns this CPU measures ("EPYC" or "Xeon"), its grid set into `args`."""
    amx = "amx_bf16" in flag_set()
    if args.device != "cpu" or not native_bf16():
        parser.error(
            "--record writes the record of CPUs with native bfloat16 (AVX512_BF16 or AMX), on the CPU"
        )
    if args.sizes or args.no_onnx or args.no_baselines or args.batch_sizes != [1, 32]:
        parser.error(
            "--record measures the record's grid: no --sizes, --batch-sizes, --no-onnx, --no-baselines"
        )
    group = "Xeon" if amx else "EPYC"
    args.sizes, baselines, onnx, sentences_32, sentences_1 = GRIDS[group]
    args.no_baselines, args.no_onnx = not baselines, not onnx
    args.sentences, args.sentences_batch_1 = (
        args.sentences or sentences_32,
        args.sentences_batch_1 or sentences_1,
    )
    return group


def group_cells(group: str, side: str, rates: dict[int, dict[str, float]]) -> list[str]:
    """One row's cells in `group`'s columns (COLUMNS), "–" where the side was not measured."""
    cells = []
    for batch_size in (1, 32):
        rate = rates[batch_size].get(side)
        if group == "Xeon":
            precision = side.split()[-1]
            fp32 = rates[batch_size].get(side.rsplit(" ", 1)[0] + " fp32")
            ratio = f" ({rate / fp32:.2f}x fp32)" if rate and fp32 and precision in ("int8", "bf16") else ""
            cells.append(f"{_rate(rate)}{ratio}" if rate else "–")
            continue
        elmo = rates[batch_size].get(ELMO)
        versus = _versus(rate / elmo) if rate and elmo else "–"
        if rate and elmo and side.startswith("plugin paper") and rate / elmo >= ELMO_TARGET:
            versus = f"**{versus}**"
        cells += [_rate(rate) if rate else "–", versus]
    return cells


def _versus(ratio: float) -> str:
    """A ratio as the record has them: 2 decimals below 10 ("0.63x", "7.38x"), 3 figures above ("61.7x")."""
    return f"{ratio:.2f}x" if ratio < 10 else f"{common.significant(ratio)}x"


def _rate(value: float) -> str:
    return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"


def kept_group(path: str, group: str) -> dict:
    """`group`'s columns as the record at `path` holds them, with where they come from ({} where none)."""
    try:
        with open(path, encoding="utf-8") as stream:
            old = json.load(stream)
    except (OSError, ValueError):
        return {}
    if old.get("title") != TITLE:
        return {}
    if "groups" in old["data"]:  # written by this script: each CPU's columns with their own provenance
        return old["data"]["groups"].get(group, {})
    columns = [old["header"].index(column) for column in COLUMNS[group]]
    commands = old["command"].splitlines()
    source = f", transcribed from {old['data']['source']}" if old["data"].get("transcribed") else ""
    return {
        "machine": f"the earlier record's: {old['machine']}",
        "command": commands[list(COLUMNS).index(group)] if len(commands) == len(COLUMNS) else old["command"],
        "commit": f"{old['commit']}{source}",
        "date": old["date"],
        "cells": {row[0]: [row[index] for index in columns] for row in old["rows"]},
    }


def write_avx512_record(args, group: str, device, use, rates, words, flair_missing) -> None:
    """This CPU's columns of the record; the other CPU's kept from the record at `args.record`, as it was."""
    said = "; ".join(
        f"batch {size}: {count} sentences of {mean:.1f} words" for size, (count, mean) in words.items()
    )
    flair = f"; Flair's row not measured: {flair_missing}" if flair_missing else ""
    groups = {name: kept_group(args.record, name) for name in COLUMNS if name != group}
    groups[group] = {
        "machine": f"{common.machine_description(device)}; {args.threads} torch thread(s); other cores: "
        f"{use.describe() or '?'}; {cpu_flags()}",
        "command": common.this_command(),
        "commit": common.current_commit(),
        "date": common.today(),
        "cells": {row: group_cells(group, side, rates) for row, side in RECORD_ROWS},
        "notes": f"{said}; median of {args.repeats} after {args.warmup} warm-up{flair}",
        "sentences_per_second": {str(size): rate for size, rate in rates.items()},
    }
    groups = {name: groups[name] for name in COLUMNS if groups.get(name)}
    blank = {name: ["–"] * len(columns) for name, columns in COLUMNS.items()}
    cells = {name: groups.get(name, {}).get("cells", {}) for name in COLUMNS}
    rows = [
        [row, *(cell for name in COLUMNS for cell in cells[name].get(row, blank[name]))]
        for row, _ in RECORD_ROWS
    ]
    header = ["side", *(column for name in COLUMNS for column in COLUMNS[name])]
    common.print_table(header, rows)
    notes = [
        "Sentences/s, random weights, WikiText-2 test sentences sorted by length, the sides of a batch size "
        "interleaved; the plugin returns all L + 1 layers per word-piece, tokenisation included, `Elmo` its "
        f"scalar mix per word, Flair the two language models' states per word. Bold: the paper size's target, "
        f"{ELMO_TARGET:.0f}x `Elmo`, met."
    ]
    for name, columns in groups.items():
        kept = "" if name == group else "kept as the record had them, "
        detail = f"; {columns['notes']}" if columns.get("notes") else ""
        notes.append(f"The {name} columns: {kept}measured {columns['date']} at {columns['commit']}{detail}.")
    common.write_record(
        args.record,
        TITLE,
        " | ".join(f"{name} columns: {columns['machine']}" for name, columns in groups.items()),
        header,
        rows,
        data={"groups": groups},
        notes=" ".join(notes),
        computed=COMPUTED,
        command="\n".join(columns["command"] for columns in groups.values()),
    )


if __name__ == "__main__":
    main()
