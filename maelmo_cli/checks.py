"""
The refusals that need no model and no AllenNLP: each in one line naming the path or option and the fix.
The `maelmo` command runs them before it imports anything heavy; the plugin runs the same functions (so each
message is defined here once), turning a `Refusal` into AllenNLP's `ConfigurationError` where its callers
expect one (`maelmo_plugin/common/partial_output.py`).
"""

import os
import sys


class Refusal(ValueError):
    """A user error found before any work: its message is the one line the command prints."""


PARTIAL_SUFFIX = ".partial"


def partial_path(output: str) -> str:
    """Where the output is written until it is complete: beside it, so that the final move is a rename."""
    return output + PARTIAL_SUFFIX


def check_output_path(output: str, force: bool, example: str = "output.txt") -> None:
    """
    Refuses an output that cannot be written, before any work is done: a directory, a missing or unwritable
    parent directory, or an existing file without `force`. `example` is a file name to suggest inside a
    directory.
    """
    if os.path.isdir(output):
        raise Refusal(
            f"The output {output} is a directory: give the path of the file to write, e.g. "
            f"{os.path.join(output, example)}."
        )
    parent = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(parent):
        what = "is not a directory" if os.path.exists(parent) else "does not exist"
        raise Refusal(
            f"Cannot write {output}: its directory {parent} {what}. Create it (mkdir -p {parent}) or give "
            f"another output path."
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise Refusal(
            f"Cannot write {output}: its directory {parent} is not writable by this user. Give an output "
            f"path in a directory you can write to."
        )
    if os.path.lexists(output) and not force:
        raise Refusal(f"{output} exists; give --force to replace it.")


def check_writable_directory(directory: str, option: str) -> None:
    """
    Refuses a `directory` (given as `option`) that this user cannot write into: the directory itself when it
    exists, else the nearest folder above it that exists (where it would be made).
    """
    existing = os.path.abspath(directory)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise Refusal(f"{option} {directory}: {existing} is a file, not a directory.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise Refusal(
            f"{option} {directory}: {existing} is not writable by this user; give a directory you can write to."
        )


def check_batch_size(batch_size: int) -> None:
    if batch_size < 1:
        raise Refusal(f"--batch-size must be at least 1, got {batch_size}.")


def check_processes(processes: int, on_gpu: bool) -> None:
    """A `--processes` that cannot run."""
    if processes < 1:
        raise Refusal(f"--processes must be at least 1, got {processes}.")
    if processes > 1 and on_gpu:
        raise Refusal(
            f"--processes {processes} runs CPU worker processes: with --cuda-device, give --processes 1 "
            f"(the GPU computes a batch in parallel already)."
        )
    if processes > 1 and not sys.platform.startswith("linux"):
        raise Refusal(
            f"--processes {processes} needs Linux (its workers are forked, and die with the command): give "
            f"--processes 1 here."
        )


def check_cuda_device_id(cuda_device: int) -> None:
    """`--cuda-device`'s form; which GPUs the process sees is checked with torch, by the plugin."""
    if cuda_device < -1:
        raise Refusal(f"--cuda-device takes a GPU id from 0, or -1 for the CPU, got {cuda_device}.")


def check_input_file(input_file: str) -> None:
    """maelmo-embed's input: one file (its lines are checked as it is read)."""
    if os.path.isdir(input_file):
        raise Refusal(
            f"The input {input_file} is a directory: maelmo-embed reads one file, one sentence per line, and "
            f"names each vector by its line; join the files first (e.g. `cat {os.path.join(input_file, '*.txt')} > "
            f"sentences.txt`), or embed each file."
        )
    if not os.path.isfile(input_file):
        raise Refusal(f"No such input file: {input_file!r}.")
