"""
ONNX export: parity with the plugin and speed, on real sentences in padded batches (docs/onnx.md).

Exports a Masked ELMo encoder with `maelmo_plugin.onnx.export.write_onnx_export`, tokenizes the first
`--sentences` sentences of WikiText-2's test split with the exported `tokenizer.json` (the `tokenizers`
library, as a user of the export does), in batches of `--batch-size` in corpus order (so each batch mixes
lengths and pads), and compares ONNX Runtime's `hidden_states` with the plugin's `representations` (all
L + 1 layers, real tokens and padding): the plugin as it runs on a CPU (float32, its own recurrence), and
the plugin in float64 (`exact_representations`), which also gives the plugin's own float32 error. Times
ONNX Runtime and the plugin (float32) over the same batches, interleaved, one thread.

The model is `--archive` (a `maelmo_masked_elmo_lm` model.tar.gz) or, by default, the paper's size (d 768, 4096
cells, 2 layers, bert-base-cased's vocabulary) as torch initialises it: parity and speed do not depend on
training.

    OMP_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/onnx_parity.py [--archive model.tar.gz]

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
        write_onnx_export(directory, model, tokenizer)
        print(
            f"# export: {time.perf_counter() - start:.1f} s, model.onnx "
            f"{os.path.getsize(os.path.join(directory, 'model.onnx')) / 2**20:.0f} MiB"
        )
        session = onnx_session(directory, threads=args.threads)
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

        def run_plugin(ids, mask):
            with torch.no_grad():
                layers = model.representations(torch.from_numpy(ids), torch.from_numpy(mask).bool())
            return torch.stack(layers).numpy()

        seconds = {"onnxruntime": 0.0, "plugin": 0.0}
        # Per comparison, the max over batches of each layer's max |difference|: (L + 1,)
        differences = {}
        for index, (ids, mask) in enumerate(batches):
            outputs = {}
            # Interleaved, alternating which goes first (benchmarks/common.py's timing rule).
            for name in ["onnxruntime", "plugin"] if index % 2 == 0 else ["plugin", "onnxruntime"]:
                start = time.perf_counter()
                outputs[name] = (run_onnx if name == "onnxruntime" else run_plugin)(ids, mask)
                seconds[name] += time.perf_counter() - start
            exact = torch.from_numpy(ids), torch.from_numpy(mask)
            outputs["plugin in float64"] = torch.stack(exact_representations(model, *exact)).numpy()
            for first, second in [
                ("onnxruntime", "plugin"),
                ("onnxruntime", "plugin in float64"),
                ("plugin", "plugin in float64"),
            ]:
                difference = numpy.abs(outputs[first] - outputs[second]).max(axis=(1, 2, 3))
                key = f"max |{first} - {second}|"
                differences[key] = numpy.maximum(differences.get(key, difference), difference)
        for key, per_layer in differences.items():
            layers = ", ".join(f"{difference:.2e}" for difference in per_layer)
            print(f"{key}: {per_layer.max():.2e} (per layer h_0 ... h_L: {layers})")
        for name, total in seconds.items():
            print(f"{name}: {total:.2f} s, {real / total:.0f} word-pieces/s (real ones, padding excluded)")


if __name__ == "__main__":
    main()
