"""
A user's files are never destroyed by a run that fails: the commands that write a file (`maelmo-embed`,
`maelmo-vocab`, `allennlp predict --output-file` through `maelmo_plugin/compat.py`) check the output path
before any work, write beside it to `OUTPUT.partial`, and move that into place (`os.replace`, atomic on one
file system) only when it is complete. A run that stops early leaves an existing output exactly as it was.

`maelmo_declarations/owned_outputs.py` gives the one-line refusals (`check_file_output`); `PartialLock` keeps
two runs from writing one partial; `partial_directory` is a command's own `OUTPUT.partial/` (`maelmo-embed`, `maelmo-merge`): never a link, a
file or another command's directory, which would be written through or removed; `partial_file` is the
write-aside-then-move pattern for a single file.
"""

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, Optional

from maelmo_declarations.owned_outputs import partial_path
from maelmo_declarations.refusals import Refusal


class PartialLock:
    """
    An exclusive `flock` on `lock_file`, taken without waiting, so that two runs cannot write one partial
    output; the kernel releases it when the process ends, even by `kill -9`. The holder's process id is
    written into the file, for the message the next run gets.

    # Parameters

    lock_file : `str`
        Created if missing.
    output : `str`
        The output the partial is for, named in the message.
    """

    def __init__(self, lock_file: str, output: str) -> None:
        self.lock_file = lock_file
        while True:
            try:  # O_NOFOLLOW: a link planted at the lock's name is not followed and truncated
                descriptor = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            except OSError as error:
                if error.errno != errno.ELOOP:
                    raise
                raise Refusal(
                    f"{lock_file} is a symbolic link, which no command of this plugin writes: remove it."
                ) from None
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                holder = os.read(descriptor, 32).decode("ascii", "replace").strip() or "unknown"
                os.close(descriptor)
                if error.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                raise Refusal(
                    f"{lock_file} is held by another running command (process {holder}) writing {output}: "
                    f"wait for it to finish, or stop it and run this command again to continue."
                ) from None
            # The holder before us may have removed the file after we opened it: lock the file at the path.
            try:
                same = os.path.samestat(os.fstat(descriptor), os.stat(lock_file))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(descriptor)
        os.ftruncate(descriptor, 0)
        os.write(descriptor, str(os.getpid()).encode("ascii"))
        self._descriptor: Optional[int] = descriptor

    def release(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None


def partial_directory(output: str, owned: frozenset[str], command: str) -> tuple[str, PartialLock]:
    """
    `OUTPUT.partial/`, created if missing and locked (`PartialLock` on its `lock`), once it is checked to be
    `command`'s own: a real directory (not a link) holding only the names in `owned`. Anything else there is
    refused in one line, and left as it is.
    """
    directory = partial_path(output)
    if os.path.islink(directory) or (os.path.lexists(directory) and not os.path.isdir(directory)):
        kind = "a symbolic link" if os.path.islink(directory) else "a file"
        raise Refusal(
            f"{directory} is {kind}, not the partial directory {command} writes there: move it away, or give "
            f"another output path."
        )
    if os.path.isdir(directory):
        foreign = sorted(set(os.listdir(directory)) - owned - {"lock"})
        if foreign:
            raise Refusal(
                f"{directory} holds {', '.join(foreign[:5])}, which {command} does not write: it is not this "
                f"command's partial output (another command's, or a user's). Move it away, or give another "
                f"output path."
            )
    os.makedirs(directory, exist_ok=True)
    return directory, PartialLock(os.path.join(directory, "lock"), output)


def remove_owned(directory: str, name: str) -> str:
    """
    The path of `name` in a partial directory this command owns, after removing what is there (a link
    itself, never its target): a file is then created afresh, not written through.
    """
    path = os.path.join(directory, name)
    if os.path.lexists(path):
        if os.path.isdir(path) and not os.path.islink(path):
            raise Refusal(f"{path} is a directory, where this command writes a file: move it away.")
        os.remove(path)
    return path


@contextmanager
def partial_file(output: str, mode: str = "w", **open_kwargs: Any) -> Iterator[IO[Any]]:
    """
    Opens `OUTPUT.partial` for writing; when the block ends without error, closes it and moves it onto
    `output`; otherwise removes it, leaving `output` as it was.
    """
    partial = partial_path(output)
    stream = open(partial, mode, **open_kwargs)
    try:
        yield stream
        stream.close()
        os.replace(partial, output)
    except BaseException:
        stream.close()
        if os.path.exists(partial):
            os.remove(partial)
        raise
