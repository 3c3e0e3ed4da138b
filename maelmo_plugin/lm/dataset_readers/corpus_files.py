"""
A plain-text corpus on disk: which files a data path names, where each document starts and ends, and its lines.

One paragraph per line; documents are separated by blank lines or, with a `document_start_pattern`, start
at every line that matches it. A first pass over each file records the byte ranges of the documents (in
pieces of at most about `PIECE_BYTES`, cut at line ends) and nothing else; a piece is then read back by
seeking. So only the offsets, and one piece at a time, are ever held in memory, and several processes can
tokenize a corpus piece by piece (`allennlp maelmo-prepare --processes N`).

A file may be gzip, bzip2 or xz (`maelmo_files.common.text_files`): its offsets are then those of the
decompressed text, and a piece is read by reading the stream forward, so in order it is decompressed once.
"""

import glob
import logging
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Optional, Union

from allennlp.common.checks import ConfigurationError

from maelmo_files.common.text_files import open_at, open_binary, undecodable_line_error, without_bom

logger = logging.getLogger(__name__)

# A document is indexed in pieces of about this many bytes (cut at line ends), so that one long document (or a
# corpus with no document boundary) still splits into units that several processes can tokenize at once.
PIECE_BYTES = 1 << 20


@dataclass(frozen=True)
class DocumentPiece:
    """Where (a piece of) a document lives: byte range `[start, end)` of `path`, from 1-based line `line`."""

    path: str
    start: int
    end: int
    line: int


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

    def pieces(
        self, file_path: Union[str, os.PathLike, Sequence[str]], stats: ReadStats
    ) -> list[tuple[int, DocumentPiece]]:
        """`(document_index, piece)` for every piece of every document of the corpus, in corpus order."""
        paths = expand_paths(file_path)
        stats.files = len(paths)
        pieces: list[tuple[int, DocumentPiece]] = []
        for path in paths:
            for starts_document, piece in self._file_pieces(path, stats):
                stats.documents += starts_document
                pieces.append((stats.documents - 1, piece))
        if not pieces:
            raise ConfigurationError(
                f"The corpus {', '.join(paths)} contains no text (only empty or blank lines). "
                f"Check the path, or give a file with one paragraph per line."
            )
        return pieces

    def _file_pieces(self, path: str, stats: ReadStats) -> Iterator[tuple[bool, DocumentPiece]]:
        """
        The first pass over a file: the byte range of each piece of each document, and whether the piece
        starts a document. A piece ends at a line end once it holds `PIECE_BYTES`.
        """
        in_document, starts_document = False, False
        start: Optional[int] = None  # where the current piece starts
        start_line = 0
        offset = 0
        with open_binary(path) as lines:
            for line_number, raw in enumerate(lines, start=1):
                text = self._decode(raw, path, line_number, stats)
                if text is not None:
                    if in_document and self._ends_document(text):
                        if start is not None:
                            yield starts_document, DocumentPiece(path, start, offset, start_line)
                        in_document, start = False, None
                    # Leading blank lines are left out, so a document never "starts" with nothing in it.
                    if not in_document and text.strip():
                        in_document, starts_document = True, True
                        start, start_line = offset, line_number
                    elif in_document and start is None:  # the next piece of a document cut at PIECE_BYTES
                        start, start_line = offset, line_number
                offset += len(raw)
                if start is not None and offset - start >= PIECE_BYTES:
                    yield starts_document, DocumentPiece(path, start, offset, start_line)
                    starts_document, start = False, None
        if start is not None:
            yield starts_document, DocumentPiece(path, start, offset, start_line)

    def _ends_document(self, text: str) -> bool:
        """Whether this line closes the current document (a matching line then opens the next one)."""
        if self._document_start is None:
            return not text.strip()
        return self._document_start.search(text.rstrip("\r\n")) is not None

    def _decode(self, raw: bytes, path: str, line_number: int, stats: ReadStats) -> Optional[str]:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as error:
            if not self._skip_undecodable_lines:
                skip = "Set `skip_undecodable_lines: true` in the dataset reader to skip such lines"
                raise undecodable_line_error(error, path, line_number, skip, ConfigurationError) from None
            stats.skipped_lines[path] = stats.skipped_lines.get(path, 0) + 1
            return None


def piece_lines(piece: DocumentPiece) -> Iterator[tuple[int, str]]:
    """The second pass: `(line_number, text)` of the piece's non-blank lines, stripped."""
    with open_at(piece.path, piece.start) as lines:
        remaining = piece.end - piece.start
        line_number = piece.line - 1
        while remaining > 0:
            raw = lines.readline()
            remaining -= len(raw)
            line_number += 1
            # Undecodable lines were reported (or counted) by the first pass; here they are skipped.
            try:
                text = without_bom(raw, line_number).decode("utf-8").strip()
            except UnicodeDecodeError:
                continue
            if text:
                yield line_number, text


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
