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

    OMP_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/onnx_parity.py [--archive model.tar.gz] [--int8]

Needs the `onnx` extra (`pip install '.[onnx]'`).
"""

import os
import re
import tempfile
import time

import numpy
import torch
from allennlp.models.archival import load_archive
from common import BERT_VOCAB, SHARED_DATA, add_size_options, masked_elmo_lm, parser, setup
from tokenizers import Tokenizer

from maelmo_plugin.common.wordpiece import load_wordpiece_tokenizer
from maelmo_plugin.hf.export import _wordpiece_tokenizer
from maelmo_plugin.onnx.export import exact_representations, onnx_session, write_onnx_export
from maelmo_plugin.onnx.quantize import INT8_MODEL_FILE, cosines

WIKITEXT2_TEST = os.path.join(SHARED_DATA, "wikitext-2", "test.txt")


def sentences(path: str, count: int) -> list[str]:
    """The first `count` sentences (3 words or more) of WikiText-2's paragraphs, headings left out."""
    found: list[str] = []
    with open(path, encoding="utf-8") as corpus:
        for line in corpus:
            line = line.strip()
            if not line or line.startswith("="):
                continue
            for sentence in re.split(r"(?<= [.!?]) ", line):
                if len(sentence.split()) >= 3:
                    found.append(sentence)
                    if len(found) == count:
                        return found
    return found


def main() -> None:
    arguments = parser(__doc__.split("\n\n")[0])
    add_size_options(arguments, size="768x4096", batch_size=32, sequence_length=0)
    arguments.add_argument("--layers", type=int, default=2)
    arguments.add_argument(
        "--archive", help="a maelmo_masked_elmo_lm model.tar.gz, not the initialised model"
    )
    arguments.add_argument("--sentences", type=int, default=1000)
    arguments.add_argument("--corpus", default=WIKITEXT2_TEST)
    arguments.add_argument(
        "--int8", action="store_true", help="model_int8.onnx too, against float32 (cosine)"
    )
    args = arguments.parse_args()
    setup(args)
    if args.archive:
        archive = load_archive(args.archive)
        model, tokenizer = archive.model, _wordpiece_tokenizer(archive, args.archive)
        print(f"# model: {args.archive}")
    else:
        dim, cells = (int(size) for size in args.size.split("x"))
        model = masked_elmo_lm(28996, dim, cells, layers=args.layers, dropout=0.0)
        tokenizer = load_wordpiece_tokenizer(BERT_VOCAB)
        print(f"# model: d {dim}, {cells} cells, {args.layers} layers, torch's init, seed {args.seed}")
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


if __name__ == "__main__":
    main()
