"""
The figure of docs/continued_pretraining.md: a Masked ELMo pre-trained further on text of another domain with
`training_config/lm/continue.jsonnet`. It records the masked perplexity of the new domain's held-out text after
each epoch (epoch 0: the starting model), and that of the first domain's held-out text before and after (what
the model keeps of it), into `results-<corpus>.json`, and draws `perplexity-<corpus>.png` from it.

* `--corpus test` (the default, a minute): the test's corpus (`tests/lm/models/pretrained_lm_test.py`): the
  fixture model, pre-trained for one epoch on `tests/fixtures/lm/corpus.txt`, continued on `repetitive.txt`,
  whose four sentences in another order are the held-out text.
* `--corpus wikitext2` (about 20 min on 2 cores): the Quickstart's model (pre-trained on the Python Language
  Reference excerpt that ships with the package), continued on WikiText-2's first 3,000 training lines.

    .venv/bin/python examples/continued_pretraining/run.py [--corpus test]
    .venv/bin/allennlp train training_config/lm/pretrain_small.jsonnet -s runs/sample -f --include-package maelmo_plugin
    .venv/bin/python examples/continued_pretraining/run.py --corpus wikitext2 --archive runs/sample/model.tar.gz
    .venv/bin/python examples/continued_pretraining/run.py --corpus test --draw   # redraw only

A step whose output exists is not run again: a stopped run continues with the same command.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(os.path.dirname(HERE))
SHARED = os.environ.get("MAELMO_SHARED_DATA", os.path.join(os.path.dirname(REPOSITORY), "shared", "data"))
SAMPLE = os.path.join(REPOSITORY, "training_config", "lm", "sample")
FIXTURES = os.path.join(REPOSITORY, "tests", "fixtures", "lm")
# The test corpus's sizes, which tests/lm/models/pretrained_lm_test.py trains with: the fixture corpus is a few
# hundred word-pieces.
TEST_OVERRIDES = {
    "trainer.num_epochs": 6,
    "data_loader.batch_size": 4,
    "data_loader.sequence_length": 16,
    "validation_data_loader.batch_size": 4,
    "validation_data_loader.sequence_length": 16,
    "trainer.learning_rate_scheduler.warmup_steps": 5,
}


def results_path(corpus: str) -> str:
    return os.path.join(HERE, f"results-{corpus}.json")


def figure_path(corpus: str) -> str:
    return os.path.join(HERE, f"perplexity-{corpus}.png")


def first_lines(source: str, target: str, count: int) -> str:
    if not os.path.exists(target):
        with open(source, encoding="utf-8") as lines, open(target + ".tmp", "w", encoding="utf-8") as out:
            for number, line in enumerate(lines):
                if number >= count:
                    break
                out.write(line)
        os.replace(target + ".tmp", target)
    return target


def evaluate(archive: str, data: str, output: str) -> float:
    if not os.path.exists(output):
        allennlp = os.path.join(os.path.dirname(sys.executable), "allennlp")
        command = [
            allennlp,
            "evaluate",
            archive,
            data,
            "--output-file",
            output,
            "--include-package",
            "maelmo_plugin",
        ]
        subprocess.run(command, cwd=REPOSITORY, check=True, capture_output=True)
    with open(output, encoding="utf-8") as stream:
        return json.load(stream)["perplexity"]


def allennlp(*arguments: str, env=None) -> None:
    command = [
        os.path.join(os.path.dirname(sys.executable), "allennlp"),
        *arguments,
        "--include-package",
        "maelmo_plugin",
    ]
    subprocess.run(command, cwd=REPOSITORY, env=env, check=True, capture_output=env is None)


def test_corpus(out: str) -> tuple[str, str, str, str, str, dict]:
    """The fixture model, and the test's files: (archive, vocab, train, held-out, first domain's held-out, -o)."""
    archive = os.path.join(out, "start", "model.tar.gz")
    if not os.path.exists(archive):
        config = os.path.join(FIXTURES, "experiment.jsonnet")
        allennlp(
            "train", config, "-s", os.path.dirname(archive), "-f", "-o", json.dumps({"trainer.num_epochs": 1})
        )
    held_out = write_test_held_out(os.path.join(out, "held_out.txt"))
    corpus = os.path.join(FIXTURES, "corpus.txt")
    return (
        archive,
        os.path.join(FIXTURES, "vocab.txt"),
        os.path.join(FIXTURES, "repetitive.txt"),
        held_out,
        corpus,
        TEST_OVERRIDES,
    )


def write_test_held_out(path: str) -> str:
    """The test corpus's held-out text, written to `path`: repetitive.txt's paragraphs in reverse order (what
    a domain's texts share is their phrases)."""
    with open(os.path.join(FIXTURES, "repetitive.txt"), encoding="utf-8") as stream:
        paragraphs = stream.read().split("\n\n")
    with open(path, "w", encoding="utf-8") as stream:
        stream.write("\n\n".join(reversed(paragraphs)))
    return path


def wikitext2_corpus(out: str, args: argparse.Namespace) -> tuple[str, str, str, str, str, dict]:
    train = first_lines(
        os.path.join(SHARED, "wikitext-2", "train.txt"), os.path.join(out, "train.txt"), args.train_lines
    )
    valid = first_lines(
        os.path.join(SHARED, "wikitext-2", "valid.txt"), os.path.join(out, "valid.txt"), args.valid_lines
    )
    overrides = {"trainer.num_epochs": args.epochs}
    return (
        args.archive,
        os.path.join(SAMPLE, "vocab.txt"),
        train,
        valid,
        os.path.join(SAMPLE, "valid.txt"),
        overrides,
    )


def run(args: argparse.Namespace) -> None:
    out = os.path.join(args.out, args.corpus)
    os.makedirs(out, exist_ok=True)
    if args.corpus == "test":
        archive, vocab, train, held_out, first_domain, overrides = test_corpus(out)
    else:
        archive, vocab, train, held_out, first_domain, overrides = wikitext2_corpus(out, args)
    start_domain = evaluate(archive, held_out, os.path.join(out, "start_new_domain.json"))
    start_first = evaluate(archive, first_domain, os.path.join(out, "start_first_domain.json"))
    run_dir = os.path.join(out, "continued")
    if not os.path.exists(os.path.join(run_dir, "model.tar.gz")):
        environment = {
            **os.environ,
            "MAELMO_LM_ARCHIVE": os.path.abspath(archive),
            "MAELMO_VOCAB": vocab,
            "MAELMO_TRAIN_PATH": train,
            "MAELMO_VALIDATION_PATH": held_out,
        }
        resume = ["-r"] if os.path.exists(os.path.join(run_dir, "config.json")) else []
        allennlp(
            "train",
            "training_config/lm/continue.jsonnet",
            "-s",
            run_dir,
            "-o",
            json.dumps(overrides),
            *resume,
            env=environment,
        )
    epochs = []
    for epoch in range(overrides["trainer.num_epochs"]):
        with open(os.path.join(run_dir, f"metrics_epoch_{epoch}.json"), encoding="utf-8") as stream:
            epochs.append(json.load(stream)["validation_perplexity"])
    end_first = evaluate(
        os.path.join(run_dir, "model.tar.gz"), first_domain, os.path.join(out, "end_first_domain.json")
    )
    results = {
        "command": "python examples/continued_pretraining/run.py " + " ".join(sys.argv[1:]),
        "corpus": args.corpus,
        "overrides": overrides,
        "new_domain_held_out_perplexity_by_epoch": [start_domain, *epochs],
        "first_domain_held_out_perplexity": {"before": start_first, "after": end_first},
    }
    with open(results_path(args.corpus), "w", encoding="utf-8") as stream:
        json.dump(results, stream, indent=2)


def draw(corpus: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(results_path(corpus), encoding="utf-8") as stream:
        results = json.load(stream)
    domain = results["new_domain_held_out_perplexity_by_epoch"]
    sample = results["first_domain_held_out_perplexity"]
    figure, axes = plt.subplots(figsize=(6, 3.5))
    axes.plot(range(len(domain)), domain, marker="o", label="the new domain's held-out text")
    last = len(domain) - 1
    axes.plot(
        [0, last],
        [sample["before"], sample["after"]],
        marker="s",
        linestyle="--",
        label="the first domain's held-out text",
    )
    axes.set_xlabel("epochs of continued pre-training (0: the starting model)")
    axes.set_ylabel("masked perplexity")
    axes.set_xticks(range(len(domain)))
    axes.legend()
    axes.set_title(f"Continued pre-training ({corpus} corpus)")
    figure.tight_layout()
    figure.savefig(figure_path(corpus), dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", choices=("test", "wikitext2"), default="test")
    parser.add_argument(
        "--archive", default="runs/sample/model.tar.gz", help="wikitext2: the Quickstart's model.tar.gz"
    )
    parser.add_argument("--out", default="runs/continued_pretraining", help="where the runs and files go")
    parser.add_argument("--train-lines", type=int, default=3000)
    parser.add_argument("--valid-lines", type=int, default=600)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--draw", action="store_true", help="only redraw the figure from the results")
    args = parser.parse_args()
    if not args.draw:
        run(args)
    draw(args.corpus)


if __name__ == "__main__":
    main()
