"""
The error of the reduced-precision embedding against fp32 (docs/performance.md, "Fast CPU inference"):

* the cosine similarity of each word-piece's vector with its fp32 vector, per layer, over the first
  `--sentences` sentences of WikiText-2's test split, embedded as `MaskedElmo.embed` does (batches of 32
  in order of length);
* one downstream figure, with `--archive` (a trained model; a random one's would mean nothing): SST-2
  accuracy on its dev set (872 sentences) of a logistic regression on frozen vectors (each layer
  mean-pooled over the sentence's word-pieces, the L + 1 concatenated), trained on the first `--train`
  sentences of SST-2's training set with fp32 vectors, then scored with fp32 and with reduced vectors, and
  trained and scored on reduced vectors.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/reduced_precision_error.py \\
        --archive model.tar.gz
    ... benchmarks/reduced_precision_error.py --size 768x4096 --sentences 200    # a random model, cosines only
"""

import csv
import os
import tempfile
import time

import common
import numpy
from onnx_parity import sentences
from representations import make_archive

from maelmo_plugin.api import MaskedElmo
from maelmo_plugin.lm.modules.recurrence.reduced_precision import native_bf16

SST2 = os.path.join(common.SHARED_DATA, "glue", "SST-2")


def cosines(actual: list[numpy.ndarray], expected: list[numpy.ndarray], layer: int) -> numpy.ndarray:
    """Per word-piece: the cosine similarity of its `layer` vectors."""
    a = numpy.concatenate([vectors[layer] for vectors in actual])
    b = numpy.concatenate([vectors[layer] for vectors in expected])
    return (a * b).sum(-1) / numpy.linalg.norm(a, axis=-1) / numpy.linalg.norm(b, axis=-1)


def sst2(split: str, count: int) -> tuple[list[str], numpy.ndarray]:
    with open(os.path.join(SST2, f"{split}.tsv"), encoding="utf-8") as tsv:
        rows = list(csv.reader(tsv, delimiter="\t", quoting=csv.QUOTE_NONE))[1 : count + 1]
    return [row[0].strip() for row in rows], numpy.array([int(row[1]) for row in rows])


def features(elmo: MaskedElmo, texts: list[str], precision: str) -> numpy.ndarray:
    """(len(texts), (L + 1) * d): each layer mean-pooled over the sentence, concatenated."""
    return numpy.stack(
        [vectors.mean(axis=1).reshape(-1) for vectors in elmo.embed(texts, precision=precision)]
    )


def downstream(elmo: MaskedElmo, reduced: list[str], train: int) -> list[list]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    train_texts, train_labels = sst2("train", train)
    dev_texts, dev_labels = sst2("dev", 872)
    train_features = {p: features(elmo, train_texts, p) for p in ["fp32", *reduced]}
    dev_features = {p: features(elmo, dev_texts, p) for p in ["fp32", *reduced]}

    def classifier(precision: str):
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
        return model.fit(train_features[precision], train_labels)

    fp32_classifier = classifier("fp32")
    exact = fp32_classifier.predict(dev_features["fp32"])
    rows = [["fp32", "fp32", f"{(exact == dev_labels).mean():.4f}", "-"]]
    for precision in reduced:
        predicted = fp32_classifier.predict(dev_features[precision])
        agreement = f"{(predicted == exact).mean():.4f}"
        rows.append(["fp32", precision, f"{(predicted == dev_labels).mean():.4f}", agreement])
        own = classifier(precision).predict(dev_features[precision])
        rows.append([precision, precision, f"{(own == dev_labels).mean():.4f}", "-"])
    return rows


def main() -> None:
    parser = common.parser(__doc__.split("\n\n")[0])
    parser.add_argument("--archive", help="a trained maelmo_masked_elmo_lm model.tar.gz")
    parser.add_argument("--size", default="768x4096", help="d x cells of the random model without --archive")
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--train", type=int, default=4000, help="SST-2 training sentences")
    parser.add_argument("--bf16", action="store_true", help="bf16 too (emulated, slow, without native bf16)")
    args = parser.parse_args()
    common.setup(args)
    reduced = ["int8"] + (["bf16"] if args.bf16 or native_bf16() else [])
    with tempfile.TemporaryDirectory() as directory:
        if args.archive:
            archive_file = args.archive
        else:
            dim, cells = common.parse_size(args.size)
            archive_file = make_archive(directory, common.BERT_VOCAB, dim, cells)
        elmo = MaskedElmo.from_archive(archive_file)
    print(f"# model: {args.archive or f'{args.size}, random (torch initialisation, seed {args.seed})'}")
    texts = sentences(common.WIKITEXT2_TEST, args.sentences)
    start = time.perf_counter()
    expected = elmo.embed(texts)
    print(f"# fp32: {len(texts)} sentences in {time.perf_counter() - start:.1f} s")
    rows = []
    for precision in reduced:
        start = time.perf_counter()
        actual = elmo.embed(texts, precision=precision)
        print(f"# {precision}: {time.perf_counter() - start:.1f} s")
        for layer in range(1, len(expected[0])):
            similarity = cosines(actual, expected, layer)
            rows.append(
                [
                    precision,
                    layer,
                    len(similarity),
                    f"{similarity.mean():.5f}",
                    f"{numpy.percentile(similarity, 1):.5f}",
                    f"{similarity.min():.5f}",
                ]
            )
    common.print_table(["precision", "layer", "word-pieces", "mean cosine", "1st percentile", "min"], rows)
    if args.archive and os.path.isdir(SST2):
        print(f"\n# SST-2: logistic regression on frozen vectors, {args.train} training sentences, dev 872")
        common.print_table(
            ["classifier trained on", "dev vectors", "dev accuracy", "same prediction as fp32"],
            downstream(elmo, reduced, args.train),
        )


if __name__ == "__main__":
    main()
