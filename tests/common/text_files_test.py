"""Text files read the same plain or compressed (found by their first bytes); undecodable lines are named."""

import bz2
import gzip
import lzma
import os
from pathlib import Path

import pytest
from allennlp.common.checks import ConfigurationError

from maelmo_declarations.refusals import Refusal
from maelmo_files.common import text_files
from maelmo_files.common.text_files import compression, open_at, open_binary, read_lines

TEXT = "The cat sleeps.\r\nA dog runs.\n\nÉté, naïve café.\n"
COMPRESSORS = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}


def write_compressed(path: Path, text: str, kind: str, encoding: str = "utf-8") -> Path:
    """`text` written to `path` as `kind` ("plain", "gzip", "bzip2" or "xz"): every reader's test fixtures."""
    data = text.encode(encoding)
    path.write_bytes(data if kind == "plain" else COMPRESSORS[kind](data))
    return path


# (kind, file name): each format with its usual suffix, and a gzip file whose name says nothing.
VARIANTS = [
    ("plain", "corpus.txt"),
    ("gzip", "corpus.txt.gz"),
    ("bzip2", "corpus.txt.bz2"),
    ("xz", "corpus.txt.xz"),
    ("gzip", "corpus.txt"),
]


@pytest.mark.parametrize("kind, name", VARIANTS)
def test_each_compression_is_found_by_its_magic_bytes_and_reads_as_the_text(tmp_path, kind, name):
    path = write_compressed(tmp_path / name, TEXT, kind)
    assert compression(path) == (None if kind == "plain" else kind)
    with open_binary(path) as stream:
        assert stream.read() == TEXT.encode("utf-8")
    with read_lines(str(path)) as lines:
        # Lines end at "\n" only; "\r" stays in the line, as in the plain file read in binary.
        assert list(lines) == [
            (1, "The cat sleeps.\r\n"),
            (2, "A dog runs.\n"),
            (3, "\n"),
            (4, "Été, naïve café.\n"),
        ]


@pytest.mark.parametrize("kind", ["plain", "gzip"])
def test_a_byte_order_mark_at_the_start_is_dropped_and_nowhere_else(tmp_path, kind):
    path = write_compressed(tmp_path / "bom.tsv", "\ufeffindex\tlabel\n\ufeff0\t1\n", kind)
    assert [text for _, text in read_lines(path)] == ["index\tlabel\n", "\ufeff0\t1\n"]


# A `Refusal` by default (`maelmo-vocab`); the plugin's readers give AllenNLP's `ConfigurationError`, as their
# other errors.
@pytest.mark.parametrize("error_type", [None, ConfigurationError])
@pytest.mark.parametrize("kind", ["plain", "gzip"])
def test_an_undecodable_line_names_the_file_the_line_and_the_fix(tmp_path, kind, error_type):
    path = write_compressed(tmp_path / "latin1.txt", "fine\ncaf\u00e9 au lait\n", kind, encoding="latin-1")
    with pytest.raises(error_type or Refusal) as error:
        list(read_lines(path) if error_type is None else read_lines(path, error_type))
    message = str(error.value)
    assert message.startswith(
        f"{path}, line 2: not valid UTF-8 (invalid continuation byte at byte 3 of the line)."
    )
    assert "iconv -f LATIN1 -t UTF-8" in message
    assert ("gzip-compressed: decompress it first" in message) == (kind == "gzip")


@pytest.mark.parametrize("kind", ["plain", "gzip", "bzip2", "xz"])
def test_open_at_reads_from_an_offset_of_the_decompressed_text(tmp_path, kind):
    text = "".join(f"line {number}\n" for number in range(1000))
    path = write_compressed(tmp_path / "lines", text, kind)
    offsets = [0, 7, 3000, 3000, 5000, 10, 9000]  # forward, repeated, and backward
    for offset in offsets:
        with open_at(path, offset) as stream:
            assert stream.read(20) == text.encode()[offset : offset + 20]


def test_reading_a_compressed_file_forward_reuses_one_stream(tmp_path, monkeypatch):
    text = "".join(f"line {number}\n" for number in range(1000))
    path = write_compressed(tmp_path / "lines.gz", text, "gzip")
    opened = []
    open_binary = text_files.open_binary
    monkeypatch.setattr(text_files, "open_binary", lambda p: opened.append(p) or open_binary(p))
    for offset in (0, 100, 2000, 5000):
        with open_at(path, offset) as stream:
            assert stream.read(5) == text.encode()[offset : offset + 5]
    assert len(opened) == 1
    with open_at(path, 10) as stream:  # behind the stream: it is opened again
        assert stream.read(5) == text.encode()[10:15]
    assert len(opened) == 2
    # A file changed since is opened anew, never read from the stale stream.
    write_compressed(path, "new text\n" * 100, "gzip")
    os.utime(path, ns=(1, 1))
    with open_at(path, 900) as stream:
        assert stream.read() == b""
    with open_at(path, 0) as stream:
        assert stream.read(8) == b"new text"
