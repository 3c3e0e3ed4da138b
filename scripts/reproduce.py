"""
Runs the campaign behind one claim of docs/reproduction.md, resumably, and keeps its small result files.

    WIKITEXT2_DIR=path/to/wikitext-2 MAELMO_VOCAB=path/to/bert-base-cased-vocab.txt \
    [MAELMO_GLUE_DIR=path/to/glue_data] .venv/bin/python scripts/reproduce.py CLAIM [--core N]

CLAIM is one of sequence_length, btbptt, cell, mask_accumulation, tuning (each encoder's learning rate),
compute and glue (whose encoders are compute's archives, pre-trained first where missing). Two workers can run at once, one per core, on two
claims or on the same one (a run being trained by one worker is left to it by the other).
    .venv/bin/python scripts/reproduce.py --list
`--runs PATTERN` (repeatable) takes only the runs whose names match, in the campaign's order: a worker per
core can so be given its share, e.g. `glue --runs 'elmo-*'` next to `glue --runs 'bert-*'`.

Every run is a variant of a config under training_config/ (written to runs/reproduction/<claim>/configs/,
so the file says what ran), trained by `allennlp train` pinned to one CPU core with one thread, so that
the seconds of different runs compare. What the report needs is copied to
docs/reproduction/results/<claim>/<run>/ (metrics, curves, speed, config: small JSON files), which
scripts/draw_report.py reads; checkpoints and archives stay under runs/. A run whose results are there is
done (delete its folder to run it again), so a fresh clone goes on where the committed results stop; one
that was stopped (a session's end, a crash) continues exactly with `-r`. So the campaign of a claim can be
run again and again until it has finished. A GLUE run whose encoder's archive is missing (a fresh clone)
first pre-trains it again from its compute config, which is seeded: the committed compute results are left
as they are, and the log compares the new archive's final perplexity with them.

Sizes are chosen so that each claim's runs fit in about 4 CPU-core-hours; docs/reproduction.md compares
them with the paper's.
"""
import argparse
import contextlib
import fcntl
import fnmatch
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

REPOSITORY = Path(__file__).resolve().parent.parent
RUNS = REPOSITORY / "runs" / "reproduction"
RESULTS = REPOSITORY / "docs" / "reproduction" / "results"
KEPT = ("metrics.json", "validation_curve.json", "throughput.json", "config.json", "dev_metrics.json")
SEEDS = (1, 2, 3)
BTBPTT_SEEDS = (1, 2, 3, 4, 5, 6)
# WikiText-2 articles start at their " = Title = " line.
ARTICLES = 'document_start_pattern: "^ = [^=].* = $"'


def lm_run(name, base, data, sizes="", fields="", curve_every=100, trainer=""):
    """A pre-training run: `base` under training_config/lm/, plus Jsonnet `sizes+::`, `trainer+:` and other fields."""
    curve = f'{{ type: "maelmo_validation_curve", every_updates: {curve_every} }}'
    return {
        "name": name,
        "config": f"lm/{base}",
        "data": data,
        "fields": f"sizes+:: {{ {ARTICLES}, {sizes} }}, {fields} trainer+: {{ callbacks+: [{curve}], {trainer} }},",
    }


def small(name, data, seed, sizes="", fields="", base="pretrain_small.jsonnet", curve_every=100, trainer=""):
    return lm_run(name, base, data, sizes, f"settings+:: {{ seed: {seed} }}, {fields}", curve_every, trainer)


# The learning rates each encoder is tuned over, around its own recipe's rate (Masked ELMo's Adam 1e-3, bilm-tf's
# Adagrad 0.2, ELECTRA-small's AdamW 5e-4), by factors of 2; BERT* with post- and pre-LayerNorm blocks. The small
# configs are parameter-matched (tests/lm/parameter_matching_test.py).
TUNING = {
    "masked_elmo": ("pretrain_small.jsonnet", ("5e-4", "1e-3", "2e-3")),
    "bert_post": ("pretrain_bert_small.jsonnet", ("2.5e-4", "5e-4", "1e-3", "2e-3")),
    "bert_pre": ("pretrain_bert_small.jsonnet", ("2.5e-4", "5e-4", "1e-3", "2e-3")),
    "elmo": ("pretrain_elmo_small.jsonnet", ("0.05", "0.1", "0.2")),
}
# The tuning budget, the same for every encoder: 4 epochs of the 4,000-line subset at the small configs' 32 x 64
# word-pieces per update (about 550 updates, half the GLUE encoders' pre-training), seed 1; BERT*'s warm-up is
# its first 10% (55 updates), then its rate decays linearly to zero over the budget.
TUNING_EPOCHS = 4
BERT_TUNING_WARMUP = 55


def stateful_reading(length: int, batch_size: int, bidirectional: bool) -> dict:
    """`allennlp evaluate` overrides that read the validation text as training reads it: `batch_size` contiguous
    rows of `length`-token windows in order (odd rows right to left under BTBPTT), each window starting from the
    states its row reached on the window before."""
    return {"model.carry_states_in_evaluation": True, "validation_data_loader.stateful": True,
            "validation_data_loader.sequence_length": length, "validation_data_loader.batch_size": batch_size,
            "validation_data_loader.bidirectional": bidirectional}


def tuning_run(encoder: str, lr: str) -> dict:
    base, _ = TUNING[encoder]
    name, sizes, trainer = f"{encoder}-lr{lr}", f"epochs: {TUNING_EPOCHS}", ""
    if encoder.startswith("bert"):
        layer_norm = encoder.removeprefix("bert_")
        sizes += f', lr: {lr}, warmup_steps: {BERT_TUNING_WARMUP}, layer_norm: "{layer_norm}"'
    else:
        trainer = f"optimizer+: {{ lr: {lr} }},"
    return small(name, "subset", 1, sizes, base=base, curve_every=50, trainer=trainer)


def claims():
    short = "data_loader+: { sequence_length: 20, batch_size: 32 },"  # 640 word-pieces per update
    return {
        # Table 5: windows of 128 against 20 at equal word-pieces per update (640), 4 epochs; each model is
        # also scored on validation windows of 20, 64 and 128 (the paper does not say which it scored on).
        "sequence_length": [
            {**small(f"seq{length}-seed{seed}", "subset", seed, "epochs: 4",
                     f"data_loader+: {{ sequence_length: {length}, batch_size: {640 // length} }},"),
             "score_windows": (20, 64, 128)}
            for seed in SEEDS for length in (20, 128)
        ],
        # Table 6 (batch 20, sequence 20): BTBPTT against plain TBPTT, 6 epochs for the curves to flatten, 6 paired
        # seeds (3 left the paper's 3% inside the interval). Besides the stateless validation of the curves, each
        # archive is scored as it trained: stateful rows of 20-token windows, the states carried from window to
        # window (the mechanism BTBPTT is about: better initial states).
        "btbptt": [
            {**small(f"{arm}-seed{seed}", "subset", seed, "epochs: 6",
                     f"data_loader+: {{ sequence_length: 20, batch_size: 20, bidirectional: {bidirectional} }},"),
             "score_stateful": stateful_reading(20, 20, bidirectional == "true")}
            for seed in BTBPTT_SEEDS for arm, bidirectional in (("btbptt", "true"), ("tbptt", "false"))
        ],
        # Section 2.2: the fused cell against ELMo's clipped cell, at ELMo's initialisation for both (and the
        # fused cell at torch's, the default), 2 epochs, speed from the same runs.
        "cell": [
            small(f"{name}-seed{seed}", "subset", seed, "epochs: 2",
                  f'{short} model+: {{ encoder+: {{ cell: "{cell}", initialization: "{init}" }} }},')
            for seed in SEEDS
            for name, cell, init in (("fused-elmo_init", "fused", "elmo"), ("elmo", "elmo", "torch"),
                                     ("fused-torch_init", "fused", "torch"))
        ],
        # Section 3.1: k=4 mask sets against k=1, compared at equal updates (3 epochs each) and at equal
        # training seconds: k=1 for 12 epochs too, about k=4's time on a CPU, where a k=4 update costs about
        # 4 k=1 updates (the paper's GPUs: +6%); fewer validations, as the curve is 4 times as long.
        "mask_accumulation": [
            small(f"k{k}-seed{seed}", "subset", seed, f"epochs: 3, mask_sets: {k}", short)
            for seed in SEEDS[:2] for k in (1, 4)
        ] + [
            small(f"k1_12_epochs-seed{seed}", "subset", seed, "epochs: 12, mask_sets: 1", short, curve_every=400)
            for seed in SEEDS[:2]
        ],
        # Section 3.3: validation masked perplexity against compute, Masked ELMo and BERT* (about the same
        # number of parameters), on all of WikiText-2's training text, 2 epochs (about an hour each on one
        # core; ELMo's softmax at every position makes it about twice that); also Table 2's encoders.
        # docs/reproduction.md, the baselines: each encoder's learning rate (and BERT*'s LayerNorm placement)
        # chosen on the validation perplexity at the end of the same small budget, never on GLUE.
        "tuning": [tuning_run(encoder, lr) for encoder, (_, rates) in TUNING.items() for lr in rates],
        "compute": [
            small("masked_elmo", "full", 1, "epochs: 2", curve_every=250),
            # BERT's warm-up over the first 10% of the updates (2 epochs of about 1,250).
            small("bert", "full", 1, "epochs: 2, warmup_steps: 250", base="pretrain_bert_small.jsonnet",
                  curve_every=250),
            small("elmo", "full", 1, "epochs: 2", base="pretrain_elmo_small.jsonnet", curve_every=250),
        ],
    }


# Tables 2-3: the encoders of the "compute" claim (the same data and updates), and the random control,
# fine-tuned ("ft") on GLUE with the reduced CPU protocol of docs/results.md (a 2 x 256 head, 600 updates;
# WNLI, reported apart as the paper does, 200 updates and one seed).
GLUE_ENCODERS = {"masked_elmo": "archive-ft", "elmo": "archive-ft", "bert": "archive-ft", "random": "random-ft"}
GLUE_TASKS = {"rte": ("RTE", 6), "cola": ("CoLA", 6), "sst2": ("SST-2", 6), "wnli": ("WNLI", 2)}


def glue_runs():
    # Seed-major: a campaign stopped part-way has every encoder on the same tasks and seeds, rows to compare.
    return [
        {"name": f"{encoder}-{task}-seed{seed}", "encoder": encoder, "task": task, "seed": seed}
        for seed in SEEDS for task in GLUE_TASKS for encoder in GLUE_ENCODERS if task != "wnli" or seed == SEEDS[0]
    ]


def train_glue(run: dict, core: int) -> None:
    directory = RUNS / "glue" / run["name"]
    if kept("glue", run["name"], "dev_metrics.json"):
        return
    glue_dir = os.environ.get("MAELMO_GLUE_DIR") or sys.exit("set MAELMO_GLUE_DIR (GLUE's folder)")
    lm = "masked_elmo" if run["encoder"] == "random" else run["encoder"]
    archive = pretrained_encoder(lm, core)
    if archive is None:
        print(f"[wait] glue/{run['name']}: another worker is pre-training compute/{lm}", flush=True)
        return
    folder, validations = GLUE_TASKS[run["task"]]
    config = RUNS / "glue" / "configs" / f"{run['name']}.jsonnet"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f"// glue/{run['name']}, written by scripts/reproduce.py: the reduced CPU protocol of docs/results.md\n"
        f'(import "{REPOSITORY / "training_config" / "glue" / run["task"]}.jsonnet") + {{\n'
        f"  settings+:: {{ seed: {run['seed']} }},\n"
        f'  model+: {{ encoder: {{ type: "lstm", input_size: 128, hidden_size: 256, num_layers: 2, '
        f"bidirectional: true }} }},\n  trainer+: {{ num_epochs: {validations} }},\n}}\n"
    )
    variables = {"MAELMO_GLUE_ENCODER": GLUE_ENCODERS[run["encoder"]], "MAELMO_LM_ARCHIVE": str(archive)}
    log = RUNS / "glue" / f"{run['name']}.log"
    allennlp_train(config, directory, log, core, variables)
    dev = Path(glue_dir) / folder / "dev.tsv"
    allennlp(["evaluate", str(directory / "model.tar.gz"), str(dev), "--output-file",
              str(directory / "dev_metrics.json")], log, core, variables)
    keep("glue", run["name"], directory)


def pretrained_encoder(lm: str, core: int) -> Optional[Path]:
    """compute/`lm`'s archive, pre-trained (or finished) here if it is missing; None while another worker does it."""
    directory = RUNS / "compute" / lm
    if not (directory / "metrics.json").exists():  # an interrupted run has an archive too, of its best so far
        with taken(RUNS / "compute" / f"{lm}.lock") as mine:
            if not mine:
                return None
            run = next(run for run in claims()["compute"] if run["name"] == lm)
            log = RUNS / "compute" / f"{lm}.log"
            allennlp_train(variant("compute", run), directory, log, core)
            committed = RESULTS / "compute" / lm / "metrics.json"
            if committed.exists():  # the same seeded config: the same encoder, up to the CPU's arithmetic
                print(f"[encoder] compute/{lm}: final validation perplexity "
                      f"{final_perplexity(directory / 'metrics.json')} here, "
                      f"{final_perplexity(committed)} in the committed results", flush=True)
            else:
                keep("compute", lm, directory)
    return directory / "model.tar.gz"


def final_perplexity(metrics: Path) -> float:
    return json.loads(metrics.read_text())["validation_perplexity"]


def kept(claim: str, name: str, metrics: str = "metrics.json") -> bool:
    """Whether the run's results are in docs/reproduction/results/: it is done."""
    done = (RESULTS / claim / name / metrics).exists()
    if done:
        print(f"[kept] {claim}/{name}: its results are in {RESULTS / claim / name}", flush=True)
    return done


def keep_majority_scores() -> None:
    """What always answering the dev set's most frequent label scores, for the report's floor row."""
    from summarize_glue import majority_score  # beside this script

    glue_dir = Path(os.environ.get("MAELMO_GLUE_DIR") or sys.exit("set MAELMO_GLUE_DIR (GLUE's folder)"))
    (RESULTS / "glue").mkdir(parents=True, exist_ok=True)
    scores = {task: majority_score(glue_dir, task) for task in GLUE_TASKS}
    (RESULTS / "glue" / "majority.json").write_text(json.dumps(scores, indent=1))


def data_files(kind: str) -> dict:
    """WikiText-2 in full ("full"), or the first 4,000 training lines ("subset"); validation: 1,500 lines."""
    wikitext = Path(os.environ.get("WIKITEXT2_DIR") or sys.exit("set WIKITEXT2_DIR (WikiText-2's folder)"))
    vocab = os.environ.get("MAELMO_VOCAB") or sys.exit("set MAELMO_VOCAB (bert-base-cased's vocab.txt)")
    RUNS.mkdir(parents=True, exist_ok=True)
    files = {"train": wikitext / "train.txt"}
    for split, source, lines in (("subset", "train.txt", 4000), ("valid", "valid.txt", 1500)):
        path = RUNS / f"wikitext2-{split}-{lines}.txt"
        if not path.exists():
            with open(wikitext / source, encoding="utf-8") as text:
                path.write_text("".join(line for _, line in zip(range(lines), text)), encoding="utf-8")
        files[split] = path
    train = files["train"] if kind == "full" else files["subset"]
    return {"train": str(train.resolve()), "validation": str(files["valid"].resolve()),
            "vocab": str(Path(vocab).resolve())}


def variant(claim: str, run: dict) -> Path:
    path = RUNS / claim / "configs" / f"{run['name']}.jsonnet"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = data_files(run["data"])
    path.write_text(
        f"// {claim}/{run['name']}, written by scripts/reproduce.py\n"
        f'(import "{REPOSITORY / "training_config" / run["config"]}") + {{\n'
        f"  data:: {json.dumps(data)},\n  {run['fields']}\n}}\n"
    )
    return path


def train(claim: str, run: dict, core: int) -> None:
    # A run kept before it had a stateful reading is done again (its seed gives the same run) to be scored.
    if kept(claim, run["name"], "stateful_metrics.json" if "score_stateful" in run else "metrics.json"):
        return
    directory = RUNS / claim / run["name"]
    log = RUNS / claim / f"{run['name']}.log"
    allennlp_train(variant(claim, run), directory, log, core)
    scorings = {f"windows{length}_metrics.json": {"validation_data_loader.sequence_length": length}
                for length in run.get("score_windows", ())}  # every window from zero states
    if "score_stateful" in run:
        scorings["stateful_metrics.json"] = run["score_stateful"]
    for name, overrides in scorings.items():
        # The archive's weights on the validation text, read as `overrides` say.
        if not (directory / name).exists():
            allennlp(["evaluate", str(directory / "model.tar.gz"), data_files(run["data"])["validation"],
                      "--output-file", str(directory / name), "--overrides", json.dumps(overrides)], log, core)
    keep(claim, run["name"], directory)


def allennlp_train(config: Path, directory: Path, log: Path, core: int, variables: Optional[dict] = None) -> None:
    """`allennlp train CONFIG -s DIRECTORY`, skipped when it has finished, resumed (-r) when it was stopped."""
    # metrics.json, not model.tar.gz: AllenNLP also archives the best weights so far when a run is interrupted.
    if (directory / "metrics.json").exists() and (directory / "model.tar.gz").exists():
        print(f"[done] {directory.relative_to(RUNS)}")
        return
    resume = directory.exists() and any(directory.glob("*.th"))
    if directory.exists() and not resume:
        shutil.rmtree(directory)  # stopped before its first checkpoint: nothing to resume
    print(f"[{'resume' if resume else 'run'}] {directory.relative_to(RUNS)}", flush=True)
    arguments = ["train", str(config), "-s", str(directory), "--file-friendly-logging"]
    allennlp(arguments + (["-r"] if resume else []), log, core, variables)


def allennlp(arguments: list, log: Path, core: int, variables: Optional[dict] = None) -> None:
    """An `allennlp` command pinned to `core` with one thread (so that runs' seconds compare), logged to `log`."""
    command = ["taskset", "-c", str(core), sys.executable, "-m", "allennlp", *arguments,
               "--include-package", "maelmo_plugin"]
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **(variables or {})}
    with open(log, "a") as out:
        subprocess.run(command, cwd=REPOSITORY, env=environment, stdout=out, stderr=subprocess.STDOUT, check=True)


def keep(claim: str, name: str, directory: Path) -> None:
    target = RESULTS / claim / name
    target.mkdir(parents=True, exist_ok=True)
    scored = sorted(directory.glob("windows*_metrics.json")) + sorted(directory.glob("stateful_metrics.json"))
    for path in [directory / file_name for file_name in KEPT] + scored:
        if path.exists():
            shutil.copy(path, target / path.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("claim", nargs="?", help="the claim whose runs to run")
    parser.add_argument("--core", type=int, default=0, help="the CPU core to pin the runs to")
    parser.add_argument("--list", action="store_true", help="list the claims and their runs")
    parser.add_argument("--runs", action="append", metavar="PATTERN",
                        help="only the runs whose names match this shell pattern (repeatable), e.g. 'elmo-*'")
    args = parser.parse_args()
    all_claims = {**claims(), "glue": glue_runs()}
    if args.list or args.claim is None:
        for claim, runs in all_claims.items():
            print(f"{claim}: {', '.join(run['name'] for run in runs)}")
        return
    if args.claim not in all_claims:
        sys.exit(f"unknown claim {args.claim!r}: one of {', '.join(all_claims)}")
    if args.claim == "glue":
        keep_majority_scores()
    run_campaign(args.claim, matching(all_claims[args.claim], args.runs), args.core)


def matching(runs: list, patterns: Optional[list]) -> list:
    """The runs (in the campaign's order) whose names match one of `patterns`; all of them without any."""
    chosen = [run for run in runs if not patterns or any(fnmatch.fnmatch(run["name"], p) for p in patterns)]
    if not chosen:
        sys.exit(f"no run matches {' or '.join(patterns)}: see --list")
    return chosen


def run_campaign(claim: str, runs: list, core: int) -> None:
    """Every run not yet done; one being trained by another worker (`--core` another core) is left to it."""
    for run in runs:
        with taken(RUNS / claim / f"{run['name']}.lock") as mine:
            if not mine:
                print(f"[busy] {claim}/{run['name']}: another worker is training it", flush=True)
                continue
            train_glue(run, core) if claim == "glue" else train(claim, run, core)


@contextlib.contextmanager
def taken(lock: Path):
    """Whether this worker got `lock`; held for the block, released when it ends or the worker dies (never stale)."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True


if __name__ == "__main__":
    main()
