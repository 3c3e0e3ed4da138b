"""
Text files as people store them: plain, or compressed with gzip, bzip2 or xz, whatever their name.

The compression is found from the file's first bytes (gzip `1f 8b`, bzip2 `BZh`, xz `fd 37 7a 58 5a 00`),
not from its suffix, so `train.tsv` that is really gzip reads as well as `train.tsv.gz`. Every reader of
data in the plugin opens its files here (the GLUE and CoNLL readers, the corpus reader and so the token
stores, `maelmo-prepare`, `maelmo-vocab` and `maelmo-embed`), and decodes each line with `decode_line`,
whose error names the file, the line and the fix. Python's own `gzip`, `bz2` and `lzma` decompress.
"""

import bz2
import codecs
import contextlib
import gzip
import lzma
import os
from collections.abc import Callable, Iterator
from typing import IO, Any, Optional, Self, Union

from maelmo_declarations.refusals import Refusal

# name -> (magic bytes, opener of a binary stream). A compressed stream can seek, but only by decompressing
# up to the offset (from the start for a backward seek); `open_binary` streams are meant to be read forward.
_COMPRESSIONS: dict[str, tuple] = {
    "gzip": (b"\x1f\x8b", gzip.open),
    "bzip2": (b"BZh", bz2.open),
    "xz": (b"\xfd7zXZ\x00", lzma.open),
}
_MAGIC_BYTES = max(len(magic) for magic, _ in _COMPRESSIONS.values())

PathType = Union[str, "os.PathLike[str]"]


def compression(path: PathType) -> Optional[str]:
    """`"gzip"`, `"bzip2"` or `"xz"` when the file starts with that format's magic bytes, else `None`."""
    with open(path, "rb") as raw:
        head = raw.read(_MAGIC_BYTES)
    for name, (magic, _) in _COMPRESSIONS.items():
        if head.startswith(magic):
            return name
    return None


def open_binary(path: PathType) -> IO[bytes]:
    """`path` opened for reading bytes, decompressed if it is gzip, bzip2 or xz."""
    name = compression(path)
    if name is None:
        return open(path, "rb")
    opener: Callable[..., IO[bytes]] = _COMPRESSIONS[name][1]
    return opener(path, "rb")


def decode_line(
    raw: bytes,
    path: PathType,
    line_number: int,
    skip_hint: Optional[str] = None,
    error_type: type[Exception] = Refusal,
) -> str:
    """
    `raw` (line `line_number` of `path`, 1-based) decoded from UTF-8, or an `error_type` that names the file,
    the line and the byte, and says how to convert the file (and, with `skip_hint`, how to skip such lines
    instead).
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise undecodable_line_error(error, path, line_number, skip_hint, error_type) from None


def undecodable_line_error(
    error: UnicodeDecodeError,
    path: PathType,
    line_number: int,
    skip_hint: Optional[str] = None,
    error_type: type[Exception] = Refusal,
) -> Exception:
    """
    The error of line `line_number` of `path`, which `error` says is not UTF-8: a `Refusal`, or the
    `error_type` of the caller's other errors (AllenNLP's `ConfigurationError` for the plugin's readers, which
    this floor cannot import).
    """
    compressed = compression(path)
    fix = (
        "convert the file, e.g. `iconv -f LATIN1 -t UTF-8 in.txt > out.txt` (with the file's real encoding) "
        "or `iconv -c -f UTF-8 -t UTF-8` to drop the bad bytes"
    )
    if compressed is not None:
        fix += (
            f" (the file is {compressed}-compressed: decompress it first; line {line_number} is a line of "
            f"the decompressed text)"
        )
    fix = f"{skip_hint}, or {fix}" if skip_hint else fix[0].upper() + fix[1:]
    return error_type(
        f"{os.fspath(path)}, line {line_number}: not valid UTF-8 ({error.reason} at byte {error.start} of "
        f"the line). {fix}."
    )


def read_lines(path: PathType, error_type: type[Exception] = Refusal) -> "LineReader":
    """The decoded lines of `path` (line ends kept), whatever its compression; see `LineReader`."""
    return LineReader(path, error_type)


def without_bom(raw: bytes, line_number: int) -> bytes:
    """Line `line_number` of a file without the UTF-8 byte-order mark an editor may put at its start."""
    return raw[len(codecs.BOM_UTF8) :] if line_number == 1 and raw.startswith(codecs.BOM_UTF8) else raw


class LineReader:
    """
    Iterates over `(line_number, text)` of a text file, decompressing it and decoding each line from UTF-8
    (lines end at `\\n` only, never at a stray `\\r`), with `decode_line`'s `error_type` on the first line
    that is not UTF-8. A byte-order mark at the start of the file is dropped: it is an editor's mark, not text
    (kept, it would start the first sentence, GLUE header or `sentence_to_index` key). A context manager, so
    that the file is closed where the caller stops early.
    """

    def __init__(self, path: PathType, error_type: type[Exception] = Refusal) -> None:
        self.path = path
        self._error_type = error_type
        self._file = open_binary(path)

    def __iter__(self) -> Iterator[tuple[int, str]]:
        for line_number, raw in enumerate(self._file, start=1):
            text = decode_line(without_bom(raw, line_number), self.path, line_number, None, self._error_type)
            yield line_number, text

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# The decompressed stream of the compressed file `open_at` read last, left where that read stopped, with the
# process that opened it: (file identity, process id, stream).
_LAST_STREAM: dict[str, Any] = {}


@contextlib.contextmanager
def open_at(path: PathType, offset: int) -> Iterator[IO[bytes]]:
    """
    `path` opened as `open_binary` opens it, at byte `offset` of its (decompressed) content. A plain file
    seeks. A compressed one can only seek by decompressing up to `offset`, from the start when `offset` is
    behind the stream, so the stream is kept where the last read stopped and reused when `offset` is ahead:
    reading a compressed file's pieces in order (as each worker of a tokenization does) decompresses it once.
    """
    if compression(path) is None:
        with open(path, "rb") as plain:
            plain.seek(offset)
            yield plain
        return
    status = os.stat(path)
    identity = f"{os.path.abspath(path)}:{status.st_ino}:{status.st_size}:{status.st_mtime_ns}"
    stream = None
    if _LAST_STREAM.get("identity") == identity and _LAST_STREAM.get("pid") == os.getpid():
        stream = _LAST_STREAM.pop("stream")
        if stream.tell() > offset:
            stream.close()
            stream = None
    elif _LAST_STREAM.get("pid") == os.getpid():
        _LAST_STREAM.pop("stream").close()
    _LAST_STREAM.clear()  # a stream another process opened is left to that process
    stream = stream or open_binary(path)
    try:
        stream.seek(offset)
        yield stream
    except BaseException:
        stream.close()
        raise
    if "stream" in _LAST_STREAM:  # a nested open_at kept its own: keep one only
        stream.close()
    else:
        _LAST_STREAM.update(identity=identity, pid=os.getpid(), stream=stream)
