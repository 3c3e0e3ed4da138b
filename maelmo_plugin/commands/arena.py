"""
The `maelmo-arena` job (declared in `maelmo_declarations/commands/arena.py`): an arena file's plan run in the
folder `-s` names, which the arena owns (its manifest says so while it runs and lists its files once it has
finished), and its table printed. The same command continues the folder's arena, finished or not (a finished one
with a wider plan, `runner.record_plan`); `--force` removes a finished arena's own files and starts afresh.

    maelmo maelmo-arena examples/encoder_arena/lstm_vs_masked_elmo.jsonnet -s runs/arena
"""

import argparse
import os
from pathlib import Path

from maelmo_declarations.commands.arena import NAME
from maelmo_declarations.owned_outputs import check_output, remove_listed, write_manifest
from maelmo_declarations.refusals import Refusal
from maelmo_plugin.arena.plan import read_plan
from maelmo_plugin.arena.runner import run_arena
from maelmo_plugin.arena.table import VERDICTS_MD, write_table
from maelmo_plugin.arena.worker import RunFailed, Worker, waited


def run(args: argparse.Namespace) -> None:
    folder = args.serialization_dir
    previous = check_output(folder, NAME, True, [args.arena_file], option="The arena folder")
    plan = read_plan(args.arena_file)
    # What the plan reads is an input too: the arena is not written into the corpus's or GLUE's folder.
    inputs = [args.arena_file, *plan.corpus.values(), *(arm.config for arm in plan.arms)]
    if plan.tuning is not None:
        inputs += [plan.tuning.train, plan.tuning.validation]
    check_output(
        folder, NAME, True, inputs + ([plan.glue.directory] if plan.glue else []), option="The arena folder"
    )
    if args.force and previous is not None and previous.get("complete", True):  # a finished arena, afresh
        remove_listed(folder, previous)
    arena = Path(folder)
    arena.mkdir(parents=True, exist_ok=True)
    write_manifest(folder, NAME, files=[], complete=False)  # the folder is the arena's while it runs
    worker = Worker.of(args.core, args.gpu)
    try:
        rates = run_arena(plan, arena, worker, args.arena_file, args.allow_parameter_mismatch)
    except RunFailed as failed:  # one line; what finished is kept, and the same command goes on from there
        raise Refusal(f"{failed}; fix it and run the same command again to continue") from None
    with waited(
        arena / "locks" / "table.lock"
    ):  # workers finishing together write the table and list it in turn
        text = write_table(plan, arena, rates)
        write_manifest(folder, NAME)
    if os.environ.get("RANK", "0") == "0":  # under torchrun, the first worker says it
        print(f"maelmo-arena: the table, also in {arena / VERDICTS_MD}\n\n{text}")
