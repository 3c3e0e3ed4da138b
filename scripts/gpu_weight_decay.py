"""
Does weight decay mend the ELMo biLM's SST-2 (docs/reproduction.md, campaign c)? A diagnostic for a GPU lease,
every arm in one protocol on one GPU (AMP, as every config has it on a GPU): the arena's pre-training recipes
(reproduction/arena.py: all of WikiText-2, 2 epochs, seed 1) with AdamW's decoupled weight decay at several
strengths (BERT*'s rule: every weight but biases and norm gains), then the arena's SST-2 protocol, fine-tuned
(GLUE seeds 1 and 2) and frozen (seed 1), on each, and on each architecture untrained. One process per run, each
on its own core; results go to OUT/weight_decay.json as each run ends.

    python scripts/gpu_weight_decay.py OUT --cuda-device 0 --train wikitext-2/train.txt \
        --validation wikitext2-valid-1500.txt --vocab bert-base-cased-vocab.txt --glue glue_data

--smoke --cuda-device -1 shrinks everything to one epoch, to check the configs on a CPU before a GPU is spent.
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY))  # reproduction.lstm_weights

ARMS = [  # (encoder, AdamW's weight decay; 0: the arena's own recipe, Adam)
    ("elmo", 0.0),
    ("elmo", 0.01),
    ("elmo", 0.1),
    ("elmo", 0.5),
    ("masked_elmo", 0.0),
    ("masked_elmo", 0.1),
]


def pretraining_config(out: Path, encoder: str, decay: float, args) -> Path:
    """The arena's seed-1 run of `encoder` (reproduction.arena.resolved, at its tuned rate) on this machine's data
    and device, with AdamW's decay on every weight but biases and norm gains where `decay` is not 0."""
    from reproduction.arena import resolved, tuned

    run = resolved({"name": f"{encoder}-seed1", "tuned": encoder, "seed": 1})
    rate = tuned(encoder)[0]
    optimizer = (
        f'trainer+: {{ optimizer: {{ type: "adamw", lr: {rate}, weight_decay: {decay}, '
        f'parameter_groups: [[["bias", "norm"], {{ weight_decay: 0.0 }}]] }} }},'
        if decay
        else ""
    )
    path = out / "configs" / f"{encoder}-wd{decay}.jsonnet"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"train": args.train, "validation": args.validation, "vocab": args.vocab}
    path.write_text(
        f'(import "{REPOSITORY / "training_config" / run["config"]}") + {{\n'
        f"  data:: {json.dumps(data)},\n  {run['fields']}\n}} + {{\n"
        f"  sizes+:: {{ {'epochs: 1' if args.smoke else ''} }},\n"
        f"  settings+:: {{ cuda_device: {args.cuda_device} }},\n  {optimizer}\n}}\n"
    )
    return path


def glue_config(out: Path, name: str, encoder: str, mode: str, seed: int, args) -> Path:
    """The arena's SST-2 fine-tune (reproduction.runner.train_glue's config) on this machine's device."""
    from reproduction.runner import REPRESENTATION_DIM

    path = out / "configs" / f"{name}.jsonnet"
    path.write_text(
        f'(import "{REPOSITORY / "training_config" / "glue" / "sst2.jsonnet"}") + {{\n'
        f'  settings+:: {{ seed: {seed}, encoder: "{mode}", cuda_device: {args.cuda_device} }},\n'
        f'  model+: {{ encoder: {{ type: "lstm", input_size: {REPRESENTATION_DIM[encoder]}, hidden_size: 256, '
        f"num_layers: 2, bidirectional: true }} }},\n"
        f"  trainer+: {{ num_epochs: {1 if args.smoke else 6} }},\n}}\n"
    )
    return path


def allennlp(arguments: list, log: Path, core: int, variables: dict = None) -> int:
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **(variables or {})}
    pin = ["taskset", "-c", str(core)] if shutil.which("taskset") else []
    command = [*pin, sys.executable, "-m", "allennlp", *arguments]
    with open(log, "a") as handle:
        return subprocess.run(
            command + ["--include-package", "maelmo_plugin"],
            env=environment,
            stdout=handle,
            stderr=subprocess.STDOUT,
            cwd=REPOSITORY,
            check=False,
        ).returncode


def train(config: Path, directory: Path, log: Path, core: int, variables: dict = None) -> int:
    """`allennlp train`, so that running the script again goes on: a finished run is kept, a stopped one resumed
    from its last checkpoint (-r), one stopped before its first checkpoint started again."""
    if (directory / "metrics.json").exists() and (directory / "model.tar.gz").exists():
        return 0
    resume = directory.exists() and any(directory.glob("*.th"))
    if directory.exists() and not resume:
        shutil.rmtree(directory)
    arguments = ["train", str(config), "-s", str(directory), "--file-friendly-logging"]
    return allennlp(arguments + (["-r"] if resume else []), log, core, variables)


def pretrain(out: Path, encoder: str, decay: float, core: int, args) -> dict:
    name = f"{encoder}-wd{decay}"
    start = time.time()
    code = train(pretraining_config(out, encoder, decay, args), out / name, out / f"{name}.log", core)
    result = {"name": name, "exit": code, "seconds": round(time.time() - start)}
    metrics = out / name / "metrics.json"  # at the best epoch: a run with its scheduler's decay ends there
    if metrics.exists():
        result["validation_perplexity"] = json.loads(metrics.read_text())["best_validation_perplexity"]
    print(json.dumps(result), flush=True)
    return result


def epoch_accuracies(directory: Path) -> list:
    """SST-2 dev accuracy after each epoch, as the trainer validated it (the GLUE configs validate on dev)."""
    paths = sorted(directory.glob("metrics_epoch_*.json"), key=lambda path: int(path.stem.rsplit("_", 1)[1]))
    return [round(json.loads(path.read_text())["validation_accuracy"], 4) for path in paths]


def fine_tune(
    out: Path, name: str, encoder: str, mode: str, archive: Path, seed: int, core: int, args
) -> dict:
    start = time.time()
    variables = {"MAELMO_LM_ARCHIVE": str(archive)}
    log = out / f"{name}.log"
    code = train(glue_config(out, name, encoder, mode, seed, args), out / name, log, core, variables)
    result = {"name": name, "exit": code}
    dev = out / name / "dev_metrics.json"
    if code == 0 and not dev.exists():
        allennlp(
            [
                "evaluate",
                str(out / name / "model.tar.gz"),
                f"{args.glue}/SST-2/dev.tsv",
                "--output-file",
                str(dev),
                "--cuda-device",
                str(args.cuda_device),
            ],
            log,
            core,
            variables,
        )
    if dev.exists():
        result["dev_accuracy"] = json.loads(dev.read_text()).get("accuracy")
    result["epochs"] = epoch_accuracies(out / name)
    result["seconds"] = round(time.time() - start)
    print(json.dumps(result), flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--cuda-device", type=int, default=0)
    parser.add_argument("--train", required=True)
    parser.add_argument("--validation", required=True)
    parser.add_argument("--vocab", required=True)
    parser.add_argument("--glue", required=True)
    parser.add_argument("--arms", default=None, help="comma-separated encoder-wdX names; default: all")
    parser.add_argument("--glue-seeds", default="1,2")
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    os.environ["MAELMO_VOCAB"] = args.vocab
    os.environ["MAELMO_GLUE_DIR"] = args.glue
    args.out.mkdir(parents=True, exist_ok=True)
    arms = [arm for arm in ARMS if args.arms is None or f"{arm[0]}-wd{arm[1]}" in args.arms.split(",")]
    cores = os.cpu_count()
    results = {"pretraining": [], "sst2": []}
    seeds = [int(seed) for seed in args.glue_seeds.split(",")]
    with concurrent.futures.ThreadPoolExecutor(args.workers) as pool:
        pretrainings = {
            pool.submit(pretrain, args.out, encoder, decay, index % cores, args): (encoder, decay)
            for index, (encoder, decay) in enumerate(arms)
        }
        glue, core = [], len(arms)
        for job in concurrent.futures.as_completed(pretrainings):  # each arm's SST-2 runs start as it ends
            results["pretraining"].append(job.result())
            save(args.out, results)
            encoder, decay = pretrainings[job]
            archive = args.out / f"{encoder}-wd{decay}" / "model.tar.gz"
            if not archive.exists():
                continue
            runs = [(f"{encoder}-wd{decay}", "archive")]
            if decay == 0.0:  # the architecture untrained: the same archive, freshly initialised
                runs.append((f"{encoder}-untrained", "random"))
            for label, source in runs:
                for mode, mode_seeds in (("ft", seeds), ("fz", seeds[:1])):
                    for seed in mode_seeds:
                        name = f"{label}-{mode}-sst2-seed{seed}"
                        glue.append(
                            pool.submit(
                                fine_tune,
                                args.out,
                                name,
                                encoder,
                                f"{source}-{mode}",
                                archive,
                                seed,
                                core % cores,
                                args,
                            )
                        )
                        core += 1
        for job in concurrent.futures.as_completed(glue):
            results["sst2"].append(job.result())
            save(args.out, results)
    from reproduction.lstm_weights import archive_lstm_weight_sizes

    for entry in results["pretraining"]:
        archive = args.out / entry["name"] / "model.tar.gz"
        if archive.exists():
            entry["lstm_weights"] = archive_lstm_weight_sizes(archive)
    save(args.out, results)


def save(out: Path, results: dict) -> None:
    """weight_decay.json as it stands: a lease that ends mid-way keeps every run that finished."""
    partial = out / "weight_decay.json.partial"
    partial.write_text(json.dumps(results, indent=1) + "\n")
    partial.replace(out / "weight_decay.json")


if __name__ == "__main__":
    main()
