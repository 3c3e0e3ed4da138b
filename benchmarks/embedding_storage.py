"""
What `allennlp maelmo-embed` writes per input line with each output choice (`--layer`, `--pool`) and each
`--storage` (float32, float16), against the size the command states before it runs
(`maelmo_plugin/embedding/output_size.py`), and what float16 storage costs in accuracy against float32: each
vector's largest error, relative to the vector's largest value, and the largest 1 - cosine similarity between
a float16 vector and its float32 original.

The input is WikiText-2's test text cut into sentences (at " . "), blank lines and headings left out, the first
`--lines` of them. Both storages come from one run of the same batches, so the float16 file holds the float32
vectors rounded, and nothing else differs. Nothing is timed: the figures do not depend on the machine.

    .venv/bin/python benchmarks/embedding_storage.py --archive /tmp/qs/model.tar.gz --lines 2000 \\
        --record benchmarks/results/records/embedding_storage.json
"""

import argparse
import os
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402  (benchmarks/ is not a package)

# (name, --layer, --pool): the default first, then the smaller outputs, as docs/embedding.md lists them.
CHOICES = [
    ("all layers, every word-piece (the default)", None, None),
    ("one layer (--layer -1), every word-piece", -1, None),
    ("the mix (--layer mix), pooled into words (--pool mean)", "mix", "mean"),
    ("all layers, one vector per line (--pool sentence)", None, "sentence"),
    ("one layer, one vector per line (--layer -1 --pool sentence)", -1, "sentence"),
]


def float16_error(full: str, half: str, lines: int) -> tuple[float, float, int]:
    """(largest |error| / the vector's largest |value|, lowest cosine similarity, values beyond float16)."""
    worst, lowest, overflow = 0.0, 1.0, 0
    with h5py.File(full, "r") as wide_file, h5py.File(half, "r") as narrow_file:
        for line in range(lines):
            wide = wide_file[str(line)][()].astype(np.float64)
            narrow = narrow_file[str(line)][()].astype(np.float64)
            overflow += int(np.count_nonzero(~np.isfinite(narrow)))
            vectors_wide = wide.reshape(-1, wide.shape[-1])
            vectors_narrow = narrow.reshape(-1, narrow.shape[-1])
            scale = np.abs(vectors_wide).max(axis=1)
            error = np.abs(vectors_narrow - vectors_wide).max(axis=1)
            worst = max(worst, float((error / scale).max()))
            cosine = (vectors_wide * vectors_narrow).sum(axis=1) / (
                np.linalg.norm(vectors_wide, axis=1) * np.linalg.norm(vectors_narrow, axis=1)
            )
            lowest = min(lowest, float(cosine.min()))
    return worst, lowest, overflow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archive", required=True, help="a Masked ELMo model.tar.gz (the Quickstart's)")
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--record", help="write the record here (benchmarks/results/records/NAME.json)")
    args = parser.parse_args()

    from allennlp.predictors import Predictor

    from maelmo_plugin.embedding import embed_file
    from maelmo_plugin.embedding.output_size import measure_output
    from maelmo_plugin.lm.loading import load_language_model_archive

    archive = load_language_model_archive(args.archive)
    sentences = common.wikitext_sentences(common.WIKITEXT2_TEST, args.lines)
    header = [
        "output",
        "float32: bytes per line",
        "stated before the run",
        "float16: bytes per line",
        "float16 over float32",
        "float16: largest error over the vector's largest value",
        "float16: largest 1 - cosine similarity",
    ]
    rows, data = [], {}
    with tempfile.TemporaryDirectory() as work:
        input_file = os.path.join(work, "sentences.txt")
        with open(input_file, "w", encoding="utf-8") as stream:
            stream.write("\n".join(sentences) + "\n")
        text_bytes = os.path.getsize(input_file)
        for name, layer, pool in CHOICES:
            predictor = Predictor.from_archive(
                archive, "maelmo_representations", extra_args={"layer": layer, "pool": pool}
            )
            files = {}
            for storage in ("float32", "float16"):
                files[storage] = os.path.join(work, f"{storage}.hdf5")
                embed_file(predictor, input_file, files[storage], batch_size=64, storage=storage, force=True)
            stated = measure_output(
                predictor, input_file, range(len(sentences)), "float32", 64 * 32, files["float32"]
            )
            sizes = {storage: os.path.getsize(path) / len(sentences) for storage, path in files.items()}
            worst, lowest, overflow = float16_error(files["float32"], files["float16"], len(sentences))
            if overflow:
                raise SystemExit(f"{name}: {overflow} values beyond float16's range")
            data[name] = {
                "bytes_per_line": sizes,
                "stated_bytes_per_line": stated.total_bytes / len(sentences),
                "largest_relative_error": worst,
                "lowest_cosine": lowest,
            }
            rows.append(
                [
                    name,
                    f"{sizes['float32']:,.0f}",
                    f"{stated.total_bytes / len(sentences):,.0f}",
                    f"{sizes['float16']:,.0f}",
                    f"{sizes['float16'] / sizes['float32']:.2f}x",
                    f"{worst:.1e}",
                    f"{1 - lowest:.1e}",
                ]
            )
    common.print_table(header, rows)
    model = archive.model
    dimension = model.representation_dim()
    notes = (
        f"{len(sentences):,} sentences of WikiText-2's test text ({text_bytes / len(sentences):.0f} bytes of text "
        f"a line), the Quickstart's model (d = {dimension}, L + 1 = {model.num_representation_layers()} "
        "layers), batches of 64. Bytes per line: the output file's size over its lines, HDF5's own bytes and "
        '`sentence_to_index` included; "stated before the run" is the size `maelmo-embed` states for float32. '
        "The vectors scale with d: at the paper's d = 768, six times these vector bytes. float16 keeps 11 "
        "significant bits: each value's error is at most 2^-11 of its size, and a value below 6e-5 keeps "
        "fewer bits (float16's subnormals); no value here exceeded float16's largest, 65,504."
    )
    if args.record:
        common.write_record(
            args.record,
            "Bulk embedding: bytes per line of each output, and float16 storage against float32",
            f"{common.cpu_model()}; no timing",
            header,
            rows,
            data=data,
            notes=notes,
        )


if __name__ == "__main__":
    main()
