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
        beautifulsoup4 transformer-smaller-training-vocab
    PYTHONPATH=/tmp/flair OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 \\
        .venv/bin/python benchmarks/embedding_throughput.py

Without Flair the script leaves its rows out and says so; ONNX Runtime needs the `onnx` extra.

With `--device cuda` the same sentences are embedded on a GPU: the plugin (cuDNN's LSTM) in fp32 and in fp32
under bf16 autocast, against `Elmo` on the same GPU; ONNX Runtime, int8 and the CPU targets are left out.
"""

import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable

import common
import numpy
import torch
from allennlp.models.archival import load_archive
from onnx_parity import WIKITEXT2_TEST, sentences
from representations import make_archive

from maelmo_plugin.api import MaskedElmo
from maelmo_plugin.hf.export import _wordpiece_tokenizer
from maelmo_plugin.lm.modules.recurrence.reduced_precision import native_bf16

sys.path.insert(0, common.REPOSITORY)
from tests.fixtures.elmo import write_elmo  # noqa: E402

# AllenNLP's elmo_2x4096_512_2048cnn_2xhighway_options.json, the original ELMo.
ORIGINAL_ELMO_OPTIONS = {
    "lstm": {
        "use_skip_connections": True,
        "projection_dim": 512,
        "cell_clip": 3,
        "proj_clip": 3,
        "dim": 4096,
        "n_layers": 2,
    },
    "char_cnn": {
        "activation": "relu",
        "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]],
        "n_highway": 2,
        "embedding": {"dim": 16},
        "n_characters": 262,
        "max_characters_per_token": 50,
    },
}
# Flair's news-forward/backward language models: 1 layer of 2048, 100-d characters, 275 characters.
FLAIR_HIDDEN, FLAIR_LAYERS, FLAIR_CHARACTER_DIM, FLAIR_CHARACTERS = 2048, 1, 100, 275
SIZES = {"paper": (768, 4096), "small": (128, 512)}
ELMO, FLAIR = "AllenNLP Elmo 2x4096/512", "Flair forward + backward"
CPU_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")

Embed = Callable[[list[str]], object]


def plugin_sides(
    directory: str, size: str, precisions: list[str], onnx: bool, device: torch.device
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
        for precision, embed in onnx_sides(directory, archive_file).items():
            sides[f"plugin {size} ONNX Runtime {precision}"] = embed
    return sides


def onnx_sides(directory: str, archive_file: str) -> dict[str, Embed]:
    """
    The export with `--quantize int8` in its documented use (docs/onnx.md): its tokenizer.json, then a session
    of model.onnx (fp32) or model_int8.onnx (int8), one thread.
    """
    from tokenizers import Tokenizer

    from maelmo_plugin.onnx.export import MODEL_FILE, onnx_session, write_onnx_export
    from maelmo_plugin.onnx.quantize import INT8_MODEL_FILE

    archive = load_archive(archive_file)
    export = os.path.join(directory, "onnx")
    os.makedirs(export)
    write_onnx_export(export, archive.model, _wordpiece_tokenizer(archive, archive_file), quantize="int8")
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

    return {"fp32": side(MODEL_FILE), "int8": side(INT8_MODEL_FILE)}


def allennlp_elmo(directory: str, device: torch.device) -> Embed:
    """AllenNLP's `Elmo` with the original options and random weights; words split at spaces."""
    from allennlp.modules.elmo import Elmo, batch_to_ids

    options_file, weight_file = write_elmo(directory, ORIGINAL_ELMO_OPTIONS)
    elmo = Elmo(options_file, weight_file, num_output_representations=1, dropout=0.0).eval().to(device)

    def embed(batch: list[str]):
        with torch.no_grad():
            characters = batch_to_ids([sentence.split() for sentence in batch]).to(device)
            return elmo(characters)["elmo_representations"]

    return embed


def flair_embeddings() -> Embed:
    """Flair's `FlairEmbeddings`, forward and backward, stacked as Flair's taggers use them."""
    from flair.data import Dictionary, Sentence
    from flair.embeddings import FlairEmbeddings, StackedEmbeddings
    from flair.models import LanguageModel

    characters = Dictionary(add_unk=True)
    for code in range(32, 32 + 4 * FLAIR_CHARACTERS):
        if len(characters) == FLAIR_CHARACTERS:
            break
        if chr(code).isprintable():
            characters.add_item(chr(code))
    models = [
        LanguageModel(
            characters,
            is_forward_lm=forward,
            hidden_size=FLAIR_HIDDEN,
            nlayers=FLAIR_LAYERS,
            embedding_size=FLAIR_CHARACTER_DIM,
            has_decoder=False,
        )
        for forward in (True, False)
    ]
    embeddings = StackedEmbeddings([FlairEmbeddings(model) for model in models]).eval()

    def embed(batch: list[str]):
        sentences = [Sentence(sentence) for sentence in batch]
        embeddings.embed(sentences)
        return sentences

    return embed


def throughput(embed: Embed, texts: list[str], batch_size: int) -> Callable[[], None]:
    """One pass over `texts` in batches of `batch_size`."""
    batches = [texts[start : start + batch_size] for start in range(0, len(texts), batch_size)]

    def run() -> None:
        for batch in batches:
            embed(batch)

    return run


def cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            flags = set(cpuinfo.read().split())
    except OSError:
        return "unknown"
    return ", ".join(f"{flag} {'yes' if flag in flags else 'no'}" for flag in CPU_FLAGS)


def main() -> None:
    parser = common.parser(__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", choices=sorted(SIZES), default=["paper", "small"])
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 32])
    parser.add_argument("--sentences", type=int, default=64, help="sentences per pass at batch > 1")
    parser.add_argument("--sentences-batch-1", type=int, default=8, help="sentences per pass at batch 1")
    parser.add_argument("--no-onnx", action="store_true")
    parser.add_argument("--no-baselines", action="store_true", help="the plugin's sides only")
    args = parser.parse_args()
    device = common.setup(args)
    print(f"# CPU flags: {cpu_flags()}; torch's CPU capability {torch.backends.cpu.get_cpu_capability()}")
    gpu = device.type == "cuda"
    precisions = ["fp32"] if gpu else ["fp32", "int8"] + (["bf16"] if native_bf16() else [])
    if not gpu and "bf16" not in precisions:
        print("# bf16: not measured, this CPU has no native bfloat16 (AVX512_BF16 or AMX)")
    onnx = not gpu and not args.no_onnx and importlib.util.find_spec("onnxruntime") is not None
    with tempfile.TemporaryDirectory() as directory:
        sides: dict[str, Embed] = {}
        if not args.no_baselines:
            sides[ELMO] = allennlp_elmo(os.path.join(directory, "elmo"), device)
            if gpu:
                print("# Flair: CPU rows only")
            elif importlib.util.find_spec("flair") is not None:
                sides[FLAIR] = flair_embeddings()
            else:
                print("# Flair: not installed (see this script's docstring), its rows are left out")
        for size in args.sizes:
            os.makedirs(os.path.join(directory, size))
            sides.update(plugin_sides(os.path.join(directory, size), size, precisions, onnx, device))
        rows, targets = [], []
        for batch_size in args.batch_sizes:
            count = args.sentences_batch_1 if batch_size == 1 else args.sentences
            texts = sorted(sentences(WIKITEXT2_TEST, count), key=len)
            runs = {name: throughput(embed, texts, batch_size) for name, embed in sides.items()}
            seconds = common.interleaved(runs, device, args.warmup, args.repeats)
            rate = {name: count / seconds[name] for name in sides}
            words = sum(len(text.split()) for text in texts) / count
            print(f"# batch {batch_size}: {count} sentences, {words:.1f} words each on average")
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
    print(f"# median of {args.repeats} after {args.warmup} warm-up; all weights random")
    common.print_table(["side", "batch", "sentences/s", "vs Elmo", "vs Flair", "vs plugin fp32"], rows)
    if targets:
        print()
        common.print_table(["size", "batch", "target", "measured", ""], targets)


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


if __name__ == "__main__":
    main()
