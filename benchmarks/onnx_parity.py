"""
ONNX export: parity with the plugin and speed, on real sentences in padded batches (docs/onnx.md).

Exports a Masked ELMo encoder with `maelmo_plugin.onnx.export.write_onnx_export`, tokenizes the first
`--sentences` sentences of WikiText-2's test split with the exported `tokenizer.json` (the `tokenizers`
library, as a user of the export does), in batches of `--batch-size` in corpus order (so each batch mixes
lengths and pads), and compares ONNX Runtime's `hidden_states` with the plugin's `representations` (all
L + 1 layers, real tokens and padding): the plugin as it runs on a CPU (float32, its own recurrence), and
the plugin in float64 (`exact_representations`), which also gives the plugin's own float32 error. Times
ONNX Runtime and the plugin (float32) over the same batches, interleaved, one thread.

With `--int8`, the export also holds model_int8.onnx (`--quantize int8`): its layers 1 ... L are compared with
model.onnx's and with the plugin's (float32) by each real word-piece's cosine (mean, 1st percentile, min),
and it is timed with the other two; the plugin in float64 is left out.

The model is `--archive` (a `maelmo_masked_elmo_lm` model.tar.gz) or, by default, the paper's size (d 768, 4096
cells, 2 layers, bert-base-cased's vocabulary) as torch initialises it: parity and speed do not depend on
training.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/onnx_parity.py \\
        [--archive model.tar.gz] [--int8]

`--record FILE` writes the record's two rows in one invocation: the paper size as above, then the test fixture
(tests/fixtures/lm/experiment.jsonnet) trained one epoch by `allennlp train` into a temporary folder, as the
tests train it (seconds); no archive to give. About half an hour on one core, nearly all of it the paper size:

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/onnx_parity.py \\
        --record benchmarks/results/records/onnx_parity.json

Needs the `onnx` extra (`pip install '.[onnx]'`).
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import common
import core_load
import numpy
import torch
from allennlp.models.archival import load_archive
from tokenizers import Tokenizer

from maelmo_plugin.common.wordpiece import load_wordpiece_tokenizer
from maelmo_plugin.hf.export import _wordpiece_tokenizer
from maelmo_plugin.onnx.export import exact_representations, onnx_session, write_onnx_export
from maelmo_plugin.onnx.quantize import INT8_MODEL_FILE, cosines

FIXTURE_CONFIG = os.path.join("tests", "fixtures", "lm", "experiment.jsonnet")
TITLE = "ONNX export against the plugin: parity and time, 1,000 WikiText-2 sentences"
COMPARISONS = {  # the record's columns of differences: (first, second) as `measure` names them
    "ONNX Runtime - plugin (float32)": ("onnxruntime", "plugin"),
    "ONNX Runtime - plugin in float64": ("onnxruntime", "plugin in float64"),
    "plugin (float32) - plugin in float64": ("plugin", "plugin in float64"),
}
HEADER = [
    "model",
    "sentences (word-pieces, padding)",
    *COMPARISONS,
    "ONNX Runtime (s)",
    "plugin (s)",
    "ONNX Runtime's speed vs the plugin's",
]


def sentences(path: str, count: int) -> list[str]:
    """The first `count` sentences (3 words or more) of WikiText-2's paragraphs, headings left out."""
    return common.wikitext_sentences(path, count, split_at=None, min_words=3)


def measure(model, tokenizer, args) -> dict:
    """Exports `model`, runs both sides over the batches and prints the figures; returns them."""
    model.eval()
    with tempfile.TemporaryDirectory() as directory:
        start = time.perf_counter()
        write_onnx_export(directory, model, tokenizer, quantize="int8" if args.int8 else None)
        files = ["model.onnx"] + ([INT8_MODEL_FILE] if args.int8 else [])
        sizes = ", ".join(
            f"{name} {os.path.getsize(os.path.join(directory, name)) / 2**20:.0f} MiB" for name in files
        )
        print(f"# export: {time.perf_counter() - start:.1f} s, {sizes}")
        session = onnx_session(directory, threads=args.threads)
        int8_session = onnx_session(directory, args.threads, INT8_MODEL_FILE) if args.int8 else None
        encoder = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
    texts = sentences(args.corpus, args.sentences)
    batches = []
    for start in range(0, len(texts), args.batch_size):
        encodings = encoder.encode_batch(texts[start : start + args.batch_size])
        ids = numpy.array([encoding.ids for encoding in encodings], dtype=numpy.int64)
        mask = numpy.array([encoding.attention_mask for encoding in encodings], dtype=numpy.int64)
        batches.append((ids, mask))
    real = sum(int(mask.sum()) for _, mask in batches)
    padded = sum(mask.size for _, mask in batches)
    lengths = [int(length) for _, mask in batches for length in mask.sum(axis=1)]
    print(
        f"# {len(texts)} sentences of {args.corpus}, {len(batches)} batches of {args.batch_size}: "
        f"{real} word-pieces ({min(lengths)} to {max(lengths)} a sentence), {padded - real} of padding"
    )

    def run_onnx(ids, mask):
        return session.run(None, {"input_ids": ids, "attention_mask": mask})[0]

    def run_int8(ids, mask):
        return int8_session.run(None, {"input_ids": ids, "attention_mask": mask})[0]

    def run_plugin(ids, mask):
        with torch.no_grad():
            layers = model.representations(torch.from_numpy(ids), torch.from_numpy(mask).bool())
        return torch.stack(layers).numpy()

    runs = {"onnxruntime": run_onnx, "plugin": run_plugin}
    if args.int8:
        runs["onnxruntime int8"] = run_int8
    seconds = dict.fromkeys(runs, 0.0)
    # Per comparison, the max over batches of each layer's max |difference|: (L + 1,)
    differences = {}
    # Per comparison with int8, each real word-piece's cosine at layers 1 ... L: (L, word-pieces)
    similarities: dict[str, list[numpy.ndarray]] = {}
    for index, (ids, mask) in enumerate(batches):
        outputs = {}
        # Interleaved, alternating the order (benchmarks/common.py's timing rule).
        for name in list(runs) if index % 2 == 0 else list(runs)[::-1]:
            start = time.perf_counter()
            outputs[name] = runs[name](ids, mask)
            seconds[name] += time.perf_counter() - start
        comparisons = [("onnxruntime", "plugin")]
        if args.int8:
            for reference in ("onnxruntime", "plugin"):
                key = f"cosine(onnxruntime int8, {reference})"
                similarities.setdefault(key, []).append(
                    cosines(outputs["onnxruntime int8"], outputs[reference], mask)
                )
        else:
            exact = torch.from_numpy(ids), torch.from_numpy(mask)
            outputs["plugin in float64"] = torch.stack(exact_representations(model, *exact)).numpy()
            comparisons += [("onnxruntime", "plugin in float64"), ("plugin", "plugin in float64")]
        for first, second in comparisons:
            difference = numpy.abs(outputs[first] - outputs[second]).max(axis=(1, 2, 3))
            key = f"max |{first} - {second}|"
            differences[key] = numpy.maximum(differences.get(key, difference), difference)
    for key, per_layer in differences.items():
        layers = ", ".join(f"{difference:.2e}" for difference in per_layer)
        print(f"{key}: {per_layer.max():.2e} (per layer h_0 ... h_L: {layers})")
    for key, parts in similarities.items():
        per_layer = numpy.concatenate(parts, axis=1)
        summary = "; ".join(
            f"h_{layer + 1} mean {values.mean():.5f}, 1st percentile {numpy.percentile(values, 1):.5f}, "
            f"min {values.min():.5f}"
            for layer, values in enumerate(per_layer)
        )
        print(
            f"{key}, {per_layer.shape[1]} word-pieces: mean {per_layer.mean():.5f}, min {per_layer.min():.5f} ({summary})"
        )
    for name, total in seconds.items():
        print(f"{name}: {total:.2f} s, {real / total:.0f} word-pieces/s (real ones, padding excluded)")
    return {
        "sentences": len(texts),
        "word_pieces": real,
        "padding": padded - real,
        "shortest": min(lengths),
        "longest": max(lengths),
        "max_difference_per_layer": {key: per_layer.tolist() for key, per_layer in differences.items()},
        "seconds": seconds,
    }


def initialised_model(args):
    """(model, tokenizer, the record's name for it): `--size` as torch initialises it, seed `--seed`."""
    dim, cells = common.parse_size(args.size)
    torch.manual_seed(args.seed)  # the same draw wherever it comes in the invocation
    model = common.masked_elmo_lm(28996, dim, cells, layers=args.layers, dropout=0.0)
    print(f"# model: d {dim}, {cells} cells, {args.layers} layers, torch's init, seed {args.seed}")
    tokenizer = load_wordpiece_tokenizer(common.BERT_VOCAB)
    return model, tokenizer, initialised_name(dim, cells, args.layers, args.seed)


def initialised_name(dim: int, cells: int, layers: int, seed: int) -> str:
    paper = "paper size: " if (dim, cells, layers) == (768, 4096, 2) else ""
    return f"{paper}d {dim}, {cells} cells, {layers} layers, bert-base-cased vocabulary, torch's initialisation (seed {seed})"


def fixture_model(directory: str):
    """(model, tokenizer, the record's name for it): FIXTURE_CONFIG trained one epoch, as the tests train it."""
    run = os.path.join(directory, "fixture")
    command = [sys.executable, "-m", "allennlp", "train", FIXTURE_CONFIG, "-s", run]
    command += ["--include-package", "maelmo_plugin", "-o", json.dumps({"trainer.num_epochs": 1})]
    print(f"# model: {FIXTURE_CONFIG} trained one epoch")
    result = subprocess.run(command, cwd=common.REPOSITORY, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"training {FIXTURE_CONFIG} failed:\n{result.stderr[-3000:]}")
    archive_file = os.path.join(run, "model.tar.gz")
    archive = load_archive(archive_file)
    model, tokenizer = archive.model, _wordpiece_tokenizer(archive, archive_file)
    encoder, pieces = model._encoder.options, model.vocab.get_vocab_size("wordpieces")
    return model, tokenizer, fixture_name(encoder.input_dim, encoder.cells, encoder.num_layers, pieces)


def fixture_name(dim: int, cells: int, layers: int, pieces: int) -> str:
    return (
        f"the test fixture (`{FIXTURE_CONFIG}`, d {dim}, {cells} cells, {layers} layers, trained one epoch; its "
        f"{pieces}-piece vocabulary splits WikiText into many pieces)"
    )


def exponent(value: float) -> str:
    """3 significant figures with a short exponent: 6.44e-6."""
    mantissa, power = f"{value:.2e}".split("e")
    return f"{mantissa}e{int(power)}"


def record_row(name: str, figures: dict) -> list:
    """HEADER's cells of one model's figures."""
    differences = figures["max_difference_per_layer"]
    onnx, plugin = figures["seconds"]["onnxruntime"], figures["seconds"]["plugin"]
    return [
        name,
        f"{figures['sentences']:,} ({figures['word_pieces']:,} pieces, {figures['shortest']} to "
        f"{figures['longest']} a sentence; {figures['padding']:,} padding)",
        *(exponent(max(differences[f"max |{first} - {second}|"])) for first, second in COMPARISONS.values()),
        common.significant(onnx, 2),
        common.significant(plugin, 2),
        f"{common.significant(plugin / onnx, 2)}x",
    ]


def main() -> None:
    arguments = common.parser(__doc__.split("\n\n")[0])
    common.add_size_options(arguments, size="768x4096", batch_size=32, sequence_length=0)
    arguments.add_argument("--layers", type=int, default=2)
    arguments.add_argument(
        "--archive", help="a maelmo_masked_elmo_lm model.tar.gz, not the initialised model"
    )
    arguments.add_argument("--sentences", type=int, default=1000)
    arguments.add_argument("--corpus", default=common.WIKITEXT2_TEST)
    arguments.add_argument(
        "--int8", action="store_true", help="model_int8.onnx too, against float32 (cosine)"
    )
    arguments.add_argument(
        "--record",
        help="measure the record's two models (the paper size, the test fixture) and write it here",
    )
    args = arguments.parse_args()
    if args.record and (args.archive or args.int8 or args.device != "cpu"):
        arguments.error("--record measures its own two models, without --int8, on a CPU: no --archive")
    device = common.setup(args)
    if not args.record:
        if args.archive:
            archive = load_archive(args.archive)
            print(f"# model: {args.archive}")
            measure(archive.model, _wordpiece_tokenizer(archive, args.archive), args)
        else:
            measure(*initialised_model(args)[:2], args)
        return
    rows, data = [], {}
    use = core_load.CoreUse().start()
    with tempfile.TemporaryDirectory() as directory:
        for build in (initialised_model, lambda _: fixture_model(directory)):
            model, tokenizer, name = build(args)
            data[name] = measure(model, tokenizer, args)
            rows.append(record_row(name, data[name]))
            del model
    use.stop()
    use.warn_if_busy("measured")
    common.print_table(HEADER, rows)
    corpus = "WikiText-2's test split" if args.corpus == common.WIKITEXT2_TEST else f"`{args.corpus}`"
    common.write_record(
        args.record,
        TITLE,
        f"{common.machine_description(device)}; {args.threads} thread(s) for torch and for ONNX Runtime; other "
        f"cores: {use.describe() or '?'}",
        HEADER,
        rows,
        data=data,
        notes=(
            f"The first {args.sentences:,} sentences of {corpus}, tokenized with the export's "
            f"`tokenizer.json`, in padded batches of {args.batch_size} in corpus order; max |difference| over all "
            "L + 1 layers and positions (padding included), the plugin as it runs on a CPU (float32) and in "
            "float64; the two sides timed interleaved, batch by batch. At d 16 the plugin's time is its per-step "
            "Python loop, which the ONNX `Scan` does not have. The embedding records compare the two on "
            "length-sorted batches."
        ),
    )


if __name__ == "__main__":
    main()
