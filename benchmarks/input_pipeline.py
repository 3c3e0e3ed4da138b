"""
Figure 5: word-pieces/s of the pre-training input pipeline (the `maelmo_mlm_corpus` reader and the
`maelmo_btbptt` loader: reading, document shuffling, sentence splitting, word-piece tokenisation, laying
the stream out in rows, batching; plus the model's dynamic masking, `MlmMasking.select` and `corrupt`,
which run on the CPU even when the model is on a GPU) against the word-pieces/s a training update
consumes. The target is a headroom of at least 20x, so that the input never starves the model.

The first and second epochs are timed separately: a loader that caches the tokenised corpus only pays
for tokenisation in the first.

The corpus is WikiText-2's training set with the bert-base-cased vocabulary (one document per article),
when ../shared/data holds them, else the sample corpus shipped with the package. `--lines N` keeps the
first N lines. The update's rate is measured here at `--size` (or given with `--step-tokens-per-second`,
e.g. a GPU figure).

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c 1 .venv/bin/python benchmarks/input_pipeline.py \
        [--record benchmarks/results/records/input_pipeline.json]

`--record FILE` writes the CPU record the guides cite (its title, header and row names are the ones they name):
the two epochs, then the update (median of `--repeats` after `--warmup`), one after the other in one
invocation, so the headroom is a ratio of two rates of the same run; not with `--step-tokens-per-second`.
"""

import itertools
import os
import tempfile
import time

import common
import core_load
from allennlp.common import Params
from allennlp.data import DataLoader, DatasetReader

from maelmo_plugin.common.wordpiece import WordpieceVocabulary
from maelmo_plugin.lm.masking import MlmMasking

TARGET = 20.0
WIKITEXT_DOCUMENT_START = "^ = [^=].* = $"


def corpus(lines: int, scratch: str):
    """(corpus path, vocabulary path, document_start_pattern, source), the corpus cut to `lines` if > 0."""
    if os.path.exists(common.WIKITEXT2_TRAIN) and os.path.exists(common.BERT_VOCAB):
        path, vocab, pattern = common.WIKITEXT2_TRAIN, common.BERT_VOCAB, WIKITEXT_DOCUMENT_START
    else:
        path, vocab, pattern = (
            str(common.SAMPLE_DIR / "train.txt"),
            str(common.SAMPLE_DIR / "vocab.txt"),
            None,
        )
    source = path
    if lines > 0:
        prefix = os.path.join(scratch, "corpus.txt")
        with open(path, encoding="utf-8") as original, open(prefix, "w", encoding="utf-8") as out:
            out.writelines(itertools.islice(original, lines))
        path = prefix
    return path, vocab, pattern, source


def loader(path: str, vocab: str, pattern, batch_size: int, sequence_length: int, cache: str) -> DataLoader:
    """The reader and loader exactly as `pretrain_common.libsonnet` configures them."""
    reader_params = {
        "type": "maelmo_mlm_corpus",
        "tokenizer": {"type": "maelmo_wordpiece", "vocab": vocab},
    }
    if pattern:
        reader_params["document_start_pattern"] = pattern
    reader = DatasetReader.from_params(Params(reader_params))
    return DataLoader.from_params(
        Params(
            {
                "type": "maelmo_btbptt",
                "batch_size": batch_size,
                "sequence_length": sequence_length,
                "shuffle": True,
                "cache_directory": cache,
                "quiet": True,  # a new cache: the first epoch tokenizes
            }
        ),
        reader=reader,
        data_path=path,
    )


def epoch(data_loader: DataLoader, masking: MlmMasking, mask_sets: int):
    """(word-pieces, seconds) of one pass over the loader, masking every batch as the model does."""
    tokens = 0
    start = time.perf_counter()
    for batch in data_loader:
        token_ids = batch["tokens"]["tokens"]["tokens"]
        selection = masking.select(token_ids, mask_sets)
        for j in range(mask_sets):
            masking.corrupt(token_ids, selection == j)
        tokens += token_ids.numel()
    return tokens, time.perf_counter() - start


def step_tokens_per_second(args, device) -> float:
    dim, cells = common.parse_size(args.size)
    model = common.masked_elmo_lm(common.PAPER_VOCAB_SIZE, dim, cells, num_mask_sets=args.mask_sets)
    token_ids = common.token_batch(common.PAPER_VOCAB_SIZE, args.batch_size, args.sequence_length, device)
    step = common.masked_lm_step(model.to(device).train(), token_ids)
    seconds = common.interleaved({"step": step}, device, args.warmup, args.repeats)["step"]
    return token_ids.numel() / seconds


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--lines", type=int, default=0, help="keep the corpus's first N lines (0: all)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--mask-sets", type=int, default=1, help="k, masked per batch")
    parser.add_argument("--size", default="512x2048", help="d x cells of the update measured for comparison")
    parser.add_argument(
        "--step-tokens-per-second", type=float, default=None, help="skip measuring the update"
    )
    parser.add_argument("--record", help="write the CPU record here (the update measured in the same run)")
    args = parser.parse_args()
    if args.record and (args.device != "cpu" or args.step_tokens_per_second or args.mask_sets != 1):
        raise SystemExit(
            "--record writes the CPU record: on a CPU, k=1, with the update measured (no --step-tokens-per-second)"
        )
    device = common.setup(args)
    use = core_load.CoreUse().start()
    with tempfile.TemporaryDirectory() as scratch:
        path, vocab, pattern, source_path = corpus(args.lines, scratch)
        data_loader = loader(path, vocab, pattern, args.batch_size, args.sequence_length, scratch)
        masking = MlmMasking(WordpieceVocabulary.from_wordpiece_vocab(vocab))
        epochs = [epoch(data_loader, masking, args.mask_sets) for _ in range(2)]
    consumed = args.step_tokens_per_second or step_tokens_per_second(args, device)
    use.stop()
    source = "given" if args.step_tokens_per_second else f"measured, d x cells {args.size}"
    print(
        f"# corpus {source_path} ({args.lines or 'all'} lines), vocabulary {vocab}; batch {args.batch_size} x "
        f"{args.sequence_length}, k={args.mask_sets}; update: {consumed:,.0f} word-pieces/s ({source})"
    )
    rows = []
    for number, (tokens, seconds) in enumerate(epochs, start=1):
        headroom = tokens / seconds / consumed
        rows.append(
            [
                f"epoch {number}",
                tokens,
                three_figures(seconds),
                tokens / seconds,
                f"{headroom:,.0f}x",
                f"≥{TARGET:.0f}x",
                common.verdict(headroom, TARGET),
            ]
        )
    header = ["pass", "word-pieces", "seconds", "pipeline word-pieces/s", "headroom", "target", ""]
    common.print_table(header, rows)
    if args.record:
        corpus_name = os.path.relpath(source_path, common.REPOSITORY)
        if source_path == common.WIKITEXT2_TRAIN:
            corpus_name = "WikiText-2's training set"
        common.write_record(
            args.record,
            "Input pipeline against the update, CPU",
            f"{common.machine_description(device)}; {args.threads} torch thread(s); other cores: "
            f"{use.describe() or '?'}",
            header,
            rows,
            data={
                "corpus": os.path.relpath(source_path, common.REPOSITORY),
                "lines": args.lines or "all",
                "epochs": [{"word_pieces": tokens, "seconds": seconds} for tokens, seconds in epochs],
                "update_word_pieces_per_second": consumed,
            },
            notes=(
                f"Reading, shuffling, sentence splitting, word-piece tokenisation, the BTBPTT layout and masking "
                f"over {corpus_name}{f' (its first {args.lines:,} lines)' if args.lines else ''}, batch "
                f"{args.batch_size} x {args.sequence_length}; headroom is the pipeline's rate over the update's "
                f"{consumed:,.0f} word-pieces/s (d={common.parse_size(args.size)[0]}, "
                f"{common.parse_size(args.size)[1]} cells; median of {args.repeats} after {args.warmup} warm-up) "
                "measured in the same run, after the two epochs. Epoch 1 includes tokenising into the cached "
                "token store; later epochs, resumes and other runs read the store."
            ),
        )


def three_figures(value: float) -> str:
    """Seconds as the record has them: three figures from 0.1 s ("14.6", "0.36"), whole seconds from 100."""
    if value >= 99.95:
        return f"{value:,.0f}"
    return f"{value:.1f}" if value >= 9.995 else f"{value:.2f}" if value >= 0.0995 else f"{value:.3g}"


if __name__ == "__main__":
    main()
