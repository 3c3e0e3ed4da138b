"""
A plain-text corpus on disk: which files a data path names, where its documents start, and its lines.

One paragraph per line; documents are separated by blank lines or, with a `document_start_pattern`, start
at every line that matches it. A first pass over each file cuts it into blocks of about `BLOCK_BYTES` (at line
ends) and records of each only its byte range, first line and whether it starts inside a document; a block
is then read back by seeking, and the second pass finds the documents in it by the same rule. So what is held
in memory grows with the corpus's bytes (one small record per MB), not with its documents, and several
processes can tokenize a corpus block by block (`allennlp maelmo-prepare --processes N`).

A file may be gzip, bzip2 or xz (`maelmo_files.common.text_files`): its offsets are then those of the
decompressed text, and a block is read by reading the stream forward, so in order it is decompressed once.
"""

import glob
import logging
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Optional, Union

from allennlp.common.checks import ConfigurationError

from maelmo_declarations.shards import Shard
from maelmo_files.common.text_files import (
    compression,
    open_at,
    open_binary,
    undecodable_line_error,
    without_bom,
)

logger = logging.getLogger(__name__)

# A corpus is read in blocks of about this many bytes (cut at line ends): the units that several processes
# tokenize at once, many documents each or a part of a long one. Their number grows with the corpus's bytes
# (one per MB), never with its number of documents.
BLOCK_BYTES = 1 << 20


@dataclass(frozen=True)
class CorpusBlock:
    """
    Byte range `[start, end)` of `path`, from 1-based line `line`; `in_document` says whether it starts
    inside a document that an earlier block of the file opened.
    """

    path: str
    start: int
    end: int
    line: int
    in_document: bool


@dataclass
class ReadStats:
    """What a pass over a corpus found, for its log line."""

    files: int = 0
    documents: int = 0
    paragraphs: int = 0
    wordpieces: int = 0
    skipped_lines: dict[str, int] = field(default_factory=dict)


class DocumentIndex:
    """
    Finds the documents of a corpus: `document_start_pattern` (a regular expression, `None` for blank-line
    separated documents) and whether lines that are not UTF-8 are skipped (counted) or stop the read.
    """

    def __init__(self, document_start_pattern: Optional[str], skip_undecodable_lines: bool) -> None:
        self._document_start = _compile_pattern(document_start_pattern)
        self._skip_undecodable_lines = skip_undecodable_lines

    @property
    def document_start_pattern(self) -> Optional[str]:
        return self._document_start.pattern if self._document_start is not None else None

    def blocks(
        self, file_path: Union[str, os.PathLike, Sequence[str]], stats: ReadStats
    ) -> list[CorpusBlock]:
        """
        The first pass: the corpus's blocks in order, each ending at the first line end at or past
        `BLOCK_BYTES` (or at the end of its file). Counts the files and documents into `stats`.
        """
        paths = expand_paths(file_path)
        stats.files = len(paths)
        blocks = [block for path in paths for block in self._file_blocks(path, stats)]
        if not stats.documents:
            raise ConfigurationError(
                f"The corpus {', '.join(paths)} contains no text (only empty or blank lines). "
                f"Check the path, or give a file with one paragraph per line."
            )
        return blocks

    def part_blocks(
        self, file_path: Union[str, os.PathLike, Sequence[str]], shard: Shard, stats: ReadStats
    ) -> list[CorpusBlock]:
        """
        The first pass over the `shard.index`-th of `shard.count` parts of the corpus: its bytes laid end to end
        are cut in N even ranges, and a part holds the lines that start in its range (a compressed file, which
        cannot be entered mid-way, goes whole to the part its first byte falls in). A part may hold no text.
        """
        paths = expand_paths(file_path)
        stats.files = len(paths)
        sizes = [os.path.getsize(path) for path in paths]
        total = sum(sizes)
        low, high = shard.index * total // shard.count, (shard.index + 1) * total // shard.count
        blocks: list[CorpusBlock] = []
        offset = 0
        for path, size in zip(paths, sizes):
            first, offset = offset, offset + size
            if compression(path) is not None:
                if low <= first < high:
                    blocks.extend(self._file_blocks(path, stats))
            elif max(low, first) < min(high, offset):
                blocks.extend(self._file_blocks(path, stats, max(low - first, 0), min(high - first, size)))
        return blocks

    def _file_blocks(
        self, path: str, stats: ReadStats, start: int = 0, end: Optional[int] = None
    ) -> Iterator[CorpusBlock]:
        """
        The blocks of the lines of `path` that start in `[start, end)` (`start` > 0 only in a plain file: it
        seeks there, and reads back only as far as the state of a document at its first line needs).
        """
        boundaries = _Boundaries(self._document_start, in_document=False)
        first_line = 1
        if start:
            start, first_line, boundaries.in_document = self._entry(path, start)
        block_start, block_line, in_document = start, first_line, boundaries.in_document
        offset = start
        with open_binary(path) if not start else open_at(path, start) as lines:
            for line_number, raw in enumerate(lines, start=first_line):
                if end is not None and offset >= end:
                    break
                text = self._decode(raw, path, line_number, stats)
                if text is not None:
                    stats.documents += boundaries.opens(text)
                offset += len(raw)
                if offset - block_start >= BLOCK_BYTES:
                    yield CorpusBlock(path, block_start, offset, block_line, in_document)
                    block_start, block_line, in_document = offset, line_number + 1, boundaries.in_document
        if offset > block_start:
            yield CorpusBlock(path, block_start, offset, block_line, in_document)

    def _entry(self, path: str, start: int) -> tuple[int, int, bool]:
        """
        Where the first line that starts at or after byte `start` of the plain file `path` starts, its line
        number, and whether it starts inside a document: the lines before it are read back, last first, only
        until one decides (`_Boundaries`: a non-blank line leaves a document open; a blank one closes it, or
        with a pattern, a blank line that matches; a blank line that does not match decides nothing).
        """
        with open(path, "rb") as stream:
            stream.seek(start - 1)
            stream.readline()
            position = stream.tell()
            stream.seek(0)
            line_number, read = 1, 0
            while read < position:
                chunk = stream.read(min(1 << 20, position - read))
                line_number += chunk.count(b"\n")
                read += len(chunk)
            in_document = False
            number = line_number
            for raw in _lines_before(stream, position):
                number -= 1
                try:
                    text = _text(raw, number)
                except UnicodeDecodeError:
                    continue  # as the forward pass: an undecodable line changes nothing
                if text.strip():
                    in_document = True
                    break
                if self._document_start is None or self._document_start.search(text.rstrip("\r\n")):
                    break
        return position, line_number, in_document

    def block_lines(self, block: CorpusBlock) -> Iterator[tuple[int, int, str]]:
        """
        The second pass: `(document, line_number, text)` of the block's non-blank lines, stripped, where
        `document` is how many documents the block has opened up to that line (0: the line belongs to the
        document open where the block starts). Undecodable lines were reported (or counted) by the first
        pass; here they are skipped.
        """
        boundaries = _Boundaries(self._document_start, block.in_document)
        document = 0
        with open_at(block.path, block.start) as lines:
            remaining = block.end - block.start
            line_number = block.line - 1
            while remaining > 0:
                raw = lines.readline()
                remaining -= len(raw)
                line_number += 1
                try:
                    text = _text(raw, line_number)
                except UnicodeDecodeError:
                    continue
                document += boundaries.opens(text)
                stripped = text.strip()
                if stripped:
                    yield document, line_number, stripped

    def _decode(self, raw: bytes, path: str, line_number: int, stats: ReadStats) -> Optional[str]:
        try:
            return _text(raw, line_number)
        except UnicodeDecodeError as error:
            if not self._skip_undecodable_lines:
                skip = "Set `skip_undecodable_lines: true` in the dataset reader to skip such lines"
                raise undecodable_line_error(error, path, line_number, skip, ConfigurationError) from None
            stats.skipped_lines[path] = stats.skipped_lines.get(path, 0) + 1
            return None


class _Boundaries:
    """
    Where documents start, line by line: the one rule both passes follow, so that they agree. A document opens
    at the first non-blank line after a closing line; a blank line closes one, or with a pattern, a matching
    line closes one and (when not blank) opens the next.
    """

    def __init__(self, document_start: Optional["re.Pattern[str]"], in_document: bool) -> None:
        self._document_start = document_start
        self.in_document = in_document

    def opens(self, text: str) -> bool:
        """Takes the next line (decoded); whether it opens a document."""
        if self.in_document and self._ends_document(text):
            self.in_document = False
        # Leading blank lines are left out, so a document never "starts" with nothing in it.
        if not self.in_document and text.strip():
            self.in_document = True
            return True
        return False

    def _ends_document(self, text: str) -> bool:
        if self._document_start is None:
            return not text.strip()
        return self._document_start.search(text.rstrip("\r\n")) is not None


def _lines_before(stream: IO[bytes], position: int) -> Iterator[bytes]:
    """The lines of `stream` that end at or before `position` (a line start), last first, read back in chunks."""
    buffer, buffer_start = b"", position
    while buffer or buffer_start:
        cut = buffer.rfind(b"\n", 0, max(len(buffer) - 1, 0))
        if cut < 0 and buffer_start:
            size = min(1 << 16, buffer_start)
            buffer_start -= size
            stream.seek(buffer_start)
            buffer = stream.read(size) + buffer
            continue
        yield buffer[cut + 1 :]
        buffer = buffer[: cut + 1]


def _text(raw: bytes, line_number: int) -> str:
    return without_bom(raw, line_number).decode("utf-8")


def expand_paths(file_path: Union[str, os.PathLike, Sequence[str]]) -> list[str]:
    """
    One path, a glob, or several of either separated by commas (or given as a list), each sorted. A
    directory stands for the files directly in it, sorted by name, hidden ones (`.name`) left out.
    """
    if isinstance(file_path, (str, os.PathLike)):
        patterns = [part.strip() for part in str(file_path).split(",") if part.strip()]
    else:
        patterns = [str(part) for part in file_path]
    paths: list[str] = []
    for pattern in patterns:
        pattern = os.path.expanduser(pattern)
        if os.path.isdir(pattern):
            matches = _directory_files(pattern)
        else:
            matches = sorted(match for match in glob.glob(pattern) if os.path.isfile(match))
        if not matches:
            what = "The glob pattern matches no file" if glob.has_magic(pattern) else "No such file"
            raise ConfigurationError(
                f"{what}: {pattern!r}. Check the corpus path where it was given: a data path of the config, "
                "or the data on the command line."
            )
        paths.extend(match for match in matches if match not in paths)
    return paths


def _directory_files(directory: str) -> list[str]:
    names = sorted(name for name in os.listdir(directory) if not name.startswith("."))
    files = [os.path.join(directory, name) for name in names if os.path.isfile(os.path.join(directory, name))]
    subdirectories = [name for name in names if os.path.isdir(os.path.join(directory, name))]
    if subdirectories:
        logger.warning(
            "The corpus directory %s holds directories, which are not read: %s. Name them in the data path "
            "(or a glob such as '%s/*/*') to read them too.",
            directory,
            ", ".join(subdirectories),
            directory.rstrip("/"),
        )
    if not files:
        raise ConfigurationError(
            f"The corpus directory {directory!r} holds no file to read (hidden files, whose names start with "
            f"'.', are left out). Check the corpus path where it was given: a data path of the config, or the data "
            "on the command line."
        )
    return files


def _compile_pattern(pattern: Optional[str]) -> Optional["re.Pattern[str]"]:
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as error:
        raise ConfigurationError(
            f"document_start_pattern {pattern!r} is not a valid regular expression: {error}."
        ) from error
