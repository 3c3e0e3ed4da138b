"""
`Refusal`, the one exception type of a refusal, and the refusals of options that need no model and no AllenNLP:
each in one line naming the path or option and the fix. The `maelmo` command runs them before it imports
anything heavy; the plugin raises the same type, so that the command line turns every refusal into one line in
one place (`maelmo_plugin/commands/subcommands.py`). A config that AllenNLP cannot build stays AllenNLP's own
`ConfigurationError`, which that place turns into one line too.
"""

import errno
import os
import re
import sys
from typing import Optional


class Refusal(ValueError):
    """A user error found before any work: its message is the one line the command prints."""


# A write the disk refused: no space, a file over the size limit (RLIMIT_FSIZE), a quota, a read-only file system.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS})


def disk_refusal(error: BaseException) -> Optional[Refusal]:
    """
    A write that the disk refused, as the one line a command prints, or None for any other error. Every writing
    command writes aside and moves its output into place when complete (`owned_outputs.py`), so what it would
    replace is as it was. h5py and tokenizers report such a failure as an error whose text names the errno.
    """
    code = error.errno if isinstance(error, OSError) else None
    if code is None:
        found = re.search(r"errno = (\d+)|\(os error (\d+)\)", str(error))
        code = int(found.group(1) or found.group(2)) if found else None
    if code not in DISK_ERRNOS:
        return None
    where = f" ({error.filename})" if isinstance(error, OSError) and error.filename else ""
    return Refusal(
        f"A write failed{where}: {os.strerror(code)}. What the command would replace is as it was, and an "
        f"unfinished run continues: free space (or fix the cause), then run the same command again."
    )


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


def check_serialization_dir(directory: str) -> None:
    """`-s` of a training run: a folder (new or not), never a file; a name without control characters."""
    if any(ord(character) < 32 or ord(character) == 127 for character in directory):
        raise Refusal(
            f"The serialization directory (-s) {directory!r} holds a control character (a newline, a tab...), "
            f"by which the run would not find its own checkpoints: give a name without."
        )
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise Refusal(
            f"The serialization directory (-s) {directory!r} is a file: give the folder the run writes into."
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
