"""
Runs the campaign behind one claim of docs/reproduction.md, resumably, and keeps its small result files.

    WIKITEXT2_DIR=path/to/wikitext-2 MAELMO_VOCAB=path/to/bert-base-cased-vocab.txt \
    [MAELMO_GLUE_DIR=path/to/glue_data] .venv/bin/python -m reproduction CLAIM [--core N]

CLAIM is one of sequence_length, btbptt, cell, mask_accumulation, compute, glue (whose encoders are compute's
archives, pre-trained first where missing), and the fair arena's: tuning (each encoder's learning rate on one
small budget), arena_encoders (the parameter-matched encoders at their tuned rates, 3 seeds; they wait until
tuning has chosen) and arena_glue (each fine-tunes the arena encoder of its own seed); elmo_transfer (SST-2
fine-tunes that tell why the stateful ELMo biLM fine-tuned below the random encoder); speed (each arm's training
speed, short runs interleaved on one core: speed.py). What each runs is in
campaigns.py (the arena's pre-training in arena.py, GLUE in fine_tuning.py, the probe in probe.py). Two workers
can run at once, one per core, on two claims or on the same one (a run being trained by one worker is left to it
by the other).
    .venv/bin/python -m reproduction --list
`--runs PATTERN` (repeatable) takes only the runs whose names match, in the campaign's order: a worker per
core can so be given its share, e.g. `glue --runs 'elmo-*'` next to `glue --runs 'bert-*'`.

Every run is a variant of a config under training_config/ (written to runs/reproduction/<claim>/configs/,
so the file says what ran), trained by `allennlp train` pinned to one CPU core with one thread, so that
the seconds of different runs compare. What the report needs is copied to
reproduction/results/<claim>/<run>/ (metrics, curves, speed, config, the CPU it ran on: small JSON
files), which draw_report.py reads; checkpoints and archives stay under runs/. A run whose results are there is
done (delete its folder to run it again), so a fresh clone goes on where the committed results stop; one
that was stopped (a session's end, a crash) continues exactly with `-r`. So the campaign of a claim can be
run again and again until it has finished. A GLUE run whose encoder's archive is missing (a fresh clone)
first pre-trains it again from its seeded config: committed pre-training results are left as they are, and
the log compares the new archive's final perplexity with them.

Sizes are chosen so that each claim's runs fit in a few CPU-core-hours (the arena's ELMo encoders take more);
docs/reproduction.md compares them with the paper's.
"""

import argparse
import fnmatch
import hashlib
import json
import os
import platform
import shutil
import sys
from pathlib import Path
from typing import Optional

from maelmo_plugin.arena.worker import Worker, taken, train_arguments
from reproduction import REPOSITORY, RESULTS, RUNS
from reproduction.arena import NOT_KEPT, TUNING_RECIPE_BERT, budget_twin, resolved
from reproduction.campaigns import all_claims
from reproduction.data import data_files
from reproduction.fine_tuning import (
    FINE_TUNING_CLAIMS,
    GLUE_CLAIMS,
    GLUE_ENCODERS,
    GLUE_TASKS,
    architecture,
    encoder_source,
)
from reproduction.probe import SAME_PRETRAINING

# What a GLUE run read: its encoder archive's path and sha256 (archive_record). A path alone does not say it: one
# held first BERT*'s post-LN encoder and then its pre-LN one (docs/reproduction.md, "Provenance").
ARCHIVE_RECORD = "encoder_archive.json"
KEPT = (
    "metrics.json",
    "validation_curve.json",
    "throughput.json",
    "config.json",
    "dev_metrics.json",
    "encoder_weights.json",
    ARCHIVE_RECORD,
)
# A GLUE task LSTM reads the encoder's representations: d for Masked ELMo and BERT*, [forward; backward] = 2P for ELMo.
REPRESENTATION_DIM = {"masked_elmo": 128, "bert": 128, "elmo": 256}
REPRESENTATION_DIM |= {
    "random": 128,
    "random_bert": 128,
    "random_elmo": 256,
    "elmo_stateful": 256,
    "elmo_lr8e3": 256,
    TUNING_RECIPE_BERT["name"]: 128,
    f"random_{TUNING_RECIPE_BERT['name']}": 128,
}


def train_glue(claim: str, run: dict, core: int) -> None:
    directory = RUNS / claim / run["name"]
    if kept(claim, run["name"], "dev_metrics.json"):
        return
    glue_dir = os.environ.get("MAELMO_GLUE_DIR") or sys.exit("set MAELMO_GLUE_DIR (GLUE's folder)")
    source_claim, source = encoder_source(claim, run)
    archive = pretrained_encoder(source_claim, source, core)
    if archive is None:
        print(
            f"[wait] {claim}/{run['name']}: {source_claim}/{source} is being pre-trained by another worker, "
            "or waits for its tuned rate",
            flush=True,
        )
        return
    if run.get("snapshot"):  # the pre-training run's weights after that update, in an archive like its own
        archive = snapshot_archive(archive.parent, run["snapshot"])
    read = archive_record(archive)  # before training reads it
    folder, validations = GLUE_TASKS[run["task"]]
    # A run whose encoder is outside GLUE_ENCODERS (the stateful record, elmo_transfer) says its own mode.
    mode = run["mode"] if "mode" in run else GLUE_ENCODERS[run["encoder"]]
    config = RUNS / claim / "configs" / f"{run['name']}.jsonnet"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f"// {claim}/{run['name']}, written by reproduction.runner: the reduced CPU protocol of docs/design.md\n"
        f'(import "{REPOSITORY / "training_config" / "glue" / run["task"]}.jsonnet") + {{\n'
        f'  settings+:: {{ seed: {run["seed"]}, encoder: "{mode}" }},\n'
        f'  model+: {{ encoder: {{ type: "lstm", input_size: {REPRESENTATION_DIM[architecture(run["encoder"])]}, hidden_size: 256, '
        f"num_layers: 2, bidirectional: true }} }},\n  trainer+: {{ num_epochs: {validations} }},\n}}\n"
    )
    variables = {"MAELMO_LM_ARCHIVE": str(archive)}
    log = RUNS / claim / f"{run['name']}.log"
    allennlp_train(config, directory, log, core, variables)
    # Written after training, which starts a directory afresh when it has no checkpoint to resume from.
    (directory / ARCHIVE_RECORD).write_text(json.dumps(read, indent=1) + "\n")
    dev = Path(glue_dir) / folder / "dev.tsv"
    allennlp(
        [
            "evaluate",
            str(directory / "model.tar.gz"),
            str(dev),
            "--output-file",
            str(directory / "dev_metrics.json"),
        ],
        log,
        core,
        variables,
    )
    if run.get("keep_weights"):  # the weights the fine-tune started from
        from reproduction.lstm_weights import archive_lstm_weight_sizes

        sizes = archive_lstm_weight_sizes(archive, reinitialize=mode.startswith("random"), seed=run["seed"])
        (directory / "encoder_weights.json").write_text(json.dumps(sizes, indent=1) + "\n")
    keep(claim, run["name"], directory)


def archive_record(archive: Path) -> dict:
    """The archive a GLUE run reads, as its results keep it: path and sha256 of the file's bytes."""
    digest = hashlib.sha256()
    with open(archive, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return {"archive": str(archive), "sha256": digest.hexdigest()}


def pretrained_encoder(claim: str, name: str, core: int) -> Optional[Path]:
    """`claim`/`name`'s archive, pre-trained (or finished) here if it is missing; None while another worker does
    it, or while its tuned rate is not chosen yet."""
    directory = RUNS / claim / name
    run = next(run for run in all_claims()[claim] if run["name"] == name)
    run = resolved(run) if "tuned" in run else run
    if (
        run is None
    ):  # an archive from before its recipe was chosen (BERT*'s before its budget's) may be another model
        return None
    twin = RUNS.joinpath(*(SAME_PRETRAINING.get((claim, name)) or budget_twin(claim, name) or (claim, name)))
    if twin != directory and not (directory / "metrics.json").exists() and (twin / "metrics.json").exists():
        return twin / "model.tar.gz"  # the same run under another name, here already
    if not (directory / "metrics.json").exists():  # an interrupted run has an archive too, of its best so far
        with taken(RUNS / claim / f"{name}.lock") as mine:
            if not mine:
                return None
            log = RUNS / claim / f"{name}.log"
            allennlp_train(variant(claim, run), directory, log, core)
            committed = RESULTS / claim / name / "metrics.json"
            if committed.exists():  # the same seeded config: the same encoder, up to the CPU's arithmetic
                print(
                    f"[encoder] {claim}/{name}: final validation perplexity "
                    f"{final_perplexity(directory / 'metrics.json')} here, "
                    f"{final_perplexity(committed)} in the committed results",
                    flush=True,
                )
            elif claim not in NOT_KEPT:
                keep(claim, name, directory)
    return directory / "model.tar.gz"


def snapshot_archive(directory: Path, updates: int) -> Path:
    """The archive of `directory`'s run with the weights it had after `updates` updates (built once)."""
    from maelmo_plugin.training.weight_snapshots import archive_with_weights, snapshot_path

    archive = directory / "snapshots" / f"model_update{updates}.tar.gz"
    if not archive.exists():
        archive_with_weights(directory / "model.tar.gz", snapshot_path(directory, updates), archive)
    return archive


def final_perplexity(metrics: Path) -> float:
    return json.loads(metrics.read_text())["validation_perplexity"]


def kept(claim: str, name: str, metrics: str = "metrics.json") -> bool:
    """Whether the run's results are in reproduction/results/: it is done."""
    done = (RESULTS / claim / name / metrics).exists()
    if done:
        print(f"[kept] {claim}/{name}: its results are in {RESULTS / claim / name}", flush=True)
    return done


def keep_majority_scores(claim: str) -> None:
    """What always answering the dev set's most frequent label scores, for the report's floor row."""
    from reproduction.glue_floor import majority_score

    glue_dir = Path(os.environ.get("MAELMO_GLUE_DIR") or sys.exit("set MAELMO_GLUE_DIR (GLUE's folder)"))
    (RESULTS / claim).mkdir(parents=True, exist_ok=True)
    scores = {task: majority_score(glue_dir, task) for task in GLUE_TASKS}
    (RESULTS / claim / "majority.json").write_text(json.dumps(scores, indent=1))


def variant(claim: str, run: dict) -> Path:
    path = RUNS / claim / "configs" / f"{run['name']}.jsonnet"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = data_files(run["data"])
    path.write_text(
        f"// {claim}/{run['name']}, written by reproduction.runner\n"
        f'(import "{REPOSITORY / "training_config" / run["config"]}") + {{\n'
        f"  data:: {json.dumps(data)},\n  {run['fields']}\n}}\n"
    )
    return path


def train(claim: str, run: dict, core: int) -> None:
    if "tuned" in run:
        if kept(claim, run["name"]):
            return
        twin = budget_twin(claim, run["name"])
        if (
            twin and (RESULTS.joinpath(*twin) / "metrics.json").exists()
        ):  # the same run, kept under another name
            shutil.copytree(RESULTS.joinpath(*twin), RESULTS / claim / run["name"])
            print(f"[same] {claim}/{run['name']}: the results of {'/'.join(twin)}, the same run", flush=True)
            return
        recipe = resolved(run)
        if recipe is None:
            print(f"[wait] {claim}: the tuning campaign has not chosen this encoder's rate yet", flush=True)
            return
        run = recipe
    # A run kept before it had a stateful reading is done again (its seed gives the same run) to be scored.
    if kept(claim, run["name"], "stateful_metrics.json" if "score_stateful" in run else "metrics.json"):
        return
    directory = RUNS / claim / run["name"]
    log = RUNS / claim / f"{run['name']}.log"
    allennlp_train(variant(claim, run), directory, log, core)
    by_position = {"validation_data_loader.mask_by_position": True} if run.get("score_by_position") else {}
    scorings = {
        f"windows{length}_metrics.json": {"validation_data_loader.sequence_length": length, **by_position}
        for length in run.get("score_windows", ())
    }  # every window from zero states; by position: the same masked word-pieces whatever the windows' length
    if "score_stateful" in run:
        scorings["stateful_metrics.json"] = run["score_stateful"]
    archives = {name: directory / "model.tar.gz" for name in scorings}
    for updates in run.get(
        "score_snapshots", ()
    ):  # the weights kept during the run, read as validation reads them
        archives[f"snapshot_update{updates}_metrics.json"] = snapshot_archive(directory, updates)
        scorings[f"snapshot_update{updates}_metrics.json"] = {}
    for name, overrides in scorings.items():
        # The archive's weights on the validation text, read as `overrides` say.
        if not (directory / name).exists():
            allennlp(
                [
                    "evaluate",
                    str(archives[name]),
                    data_files(run["data"])["validation"],
                    "--output-file",
                    str(directory / name),
                    "--overrides",
                    json.dumps(overrides),
                ],
                log,
                core,
            )
    keep(claim, run["name"], directory)


def allennlp_train(
    config: Path, directory: Path, log: Path, core: int, variables: Optional[dict] = None
) -> None:
    """`allennlp train CONFIG -s DIRECTORY`, skipped when it has finished, resumed (-r) when it was stopped."""
    # metrics.json, not model.tar.gz: AllenNLP also archives the best weights so far when a run is interrupted.
    if (directory / "metrics.json").exists() and (directory / "model.tar.gz").exists():
        print(f"[done] {directory.relative_to(RUNS)}")
        return
    arguments = train_arguments(config, directory)
    print(f"[{'resume' if '-r' in arguments else 'run'}] {directory.relative_to(RUNS)}", flush=True)
    allennlp(arguments, log, core, variables)


def allennlp(arguments: list, log: Path, core: int, variables: Optional[dict] = None) -> None:
    """An `allennlp` command pinned to `core` with one thread (so that runs' seconds compare), logged to `log`:
    run as the arena's workers run theirs."""
    Worker(core, -1).allennlp(arguments, log, variables, cwd=REPOSITORY)


# The CPU features that change a run's speed: vector width, int8 dot products, bfloat16, AMX.
SPEED_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16")


def machine() -> dict:
    """The CPU (model name and speed-relevant flags) and torch a run trained on: CPU-minutes compare only on one."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            info = cpuinfo.read()
    except OSError:
        info = ""
    names = [line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")]
    import torch  # here: the campaign's other commands need no torch

    flags = set(info.split())
    return {
        "cpu": names[0] if names else platform.processor() or platform.machine(),
        "flags": [flag for flag in SPEED_FLAGS if flag in flags],
        "torch": torch.__version__,
    }


def keep(claim: str, name: str, directory: Path) -> None:
    target = RESULTS / claim / name
    target.mkdir(parents=True, exist_ok=True)
    (target / "machine.json").write_text(json.dumps(machine(), indent=1) + "\n")
    scored = [
        path
        for pattern in ("windows*_metrics.json", "stateful_metrics.json", "snapshot_update*_metrics.json")
        for path in sorted(directory.glob(pattern))
    ]
    for path in [directory / file_name for file_name in KEPT] + scored:
        if path.exists():
            shutil.copy(path, target / path.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("claim", nargs="?", help="the claim whose runs to run")
    parser.add_argument("--core", type=int, default=0, help="the CPU core to pin the runs to")
    parser.add_argument("--list", action="store_true", help="list the claims and their runs")
    parser.add_argument(
        "--runs",
        action="append",
        metavar="PATTERN",
        help="only the runs whose names match this shell pattern (repeatable), e.g. 'elmo-*'",
    )
    args = parser.parse_args()
    campaigns = all_claims()
    if args.list or args.claim is None:
        for claim, runs in campaigns.items():
            print(f"{claim}: {', '.join(run['name'] for run in runs)}")
        return
    if args.claim not in campaigns:
        sys.exit(f"unknown claim {args.claim!r}: one of {', '.join(campaigns)}")
    if args.claim in GLUE_CLAIMS:
        keep_majority_scores(args.claim)
    if args.claim == "arena_encoders" and not (RESULTS / "arena_encoders" / "baselines.json").exists():
        from reproduction import baseline_facts  # it builds each model once to count its parameters

        baseline_facts.main()
    run_campaign(args.claim, matching(campaigns[args.claim], args.runs), args.core)


def matching(runs: list, patterns: Optional[list]) -> list:
    """The runs (in the campaign's order) whose names match one of `patterns`; all of them without any."""
    chosen = [run for run in runs if not patterns or any(fnmatch.fnmatch(run["name"], p) for p in patterns)]
    if not chosen:
        sys.exit(
            f"no run matches {' or '.join(patterns)}: see --list" if patterns else "the campaign has no runs"
        )
    return chosen


def run_campaign(claim: str, runs: list, core: int) -> None:
    """Every run not yet done; one being trained by another worker (`--core` another core) is left to it."""
    for run in runs:
        with taken(RUNS / claim / f"{run['name']}.lock") as mine:
            if not mine:
                print(f"[busy] {claim}/{run['name']}: another worker is training it", flush=True)
                continue
            train_glue(claim, run, core) if claim in FINE_TUNING_CLAIMS else train(claim, run, core)


if __name__ == "__main__":
    main()
