"""
What an embedding job's output takes on disk: stated before the run embeds anything, and refused when the
disk cannot hold it (bulk embedding writes every word-piece of every layer by default, hundreds of times the
text, and a disk that fills half-way through wastes the hours before): `maelmo-embed`'s HDF5 (`OutputSize`)
and `maelmo-ray-embed`'s Parquet (`RowVectorsSize`).

The vectors are counted exactly, line by line, from the shape the predictor gives each line
(`RepresentationsPredictor.vector_shape`: its layers, word-pieces or words, and dimension) and `--storage`'s
item size. HDF5's own bytes, a line's dataset header and its `tokens` attribute and the `sentence_to_index`
string, are estimated from costs measured with h5py on the layout `hdf5_layout.py` writes (HDF5 1.8 format):
about 260 bytes per line, and per listed token about 34 bytes plus the token's UTF-8 bytes rounded up to 8.
The constants below round those up, so the estimate errs on the large side.

Joining the batches into OUTPUT copies them while they are still on disk, so a run needs about twice the
output free at its end, less what the batches of a stopped run already hold.
"""

import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Optional, Union

from allennlp.common.util import lazy_groups_of
from allennlp.data import Instance

from maelmo_declarations.refusals import Refusal
from maelmo_files.common.text_files import read_lines
from maelmo_plugin.lm.predictors.representations import RepresentationsPredictor

ITEM_SIZE = {"float32": 4, "float16": 2}
BYTES_PER_LINE = 280
BYTES_PER_TOKEN = 36  # beside the token's own bytes, rounded up to 8
# The file's own structures (superblock, root group, the index dataset), whatever the number of lines.
BYTES_PER_FILE = 8192
# A Parquet file's footer, page headers and levels (about 2 KB at 256 rows), rounded up. Ray Data writes a file
# per block, and `maelmo-ray-embed`'s blocks are its batches of 256 rows (`embed_dataset`).
BYTES_PER_PARQUET_FILE = 4096
ROWS_PER_PARQUET_FILE = 256


@dataclass(frozen=True)
class OutputSize:
    """An embedding job's output, counted before the run (`measure_output`), and the disk it goes to."""

    lines: int
    positions: (
        str  # what has vectors, over all lines: "110,043 word-pieces", "40,120 words", "one vector a line"
    )
    shape: str  # the vectors of one position, in words: "3 layers x 768 values"
    storage: str
    vector_bytes: int
    total_bytes: int  # the output file, estimated
    written_bytes: int  # what the batches of a stopped run already hold
    free_bytes: int
    folder: str

    @property
    def needed_bytes(self) -> int:
        """Free space the run needs: the batches it still writes, then the joined copy of all of them."""
        return max(0, self.total_bytes - self.written_bytes) + self.total_bytes

    def statement(self) -> str:
        return (
            f"maelmo-embed: {self.lines:,} lines, {self.positions}, {self.shape} each: OUTPUT takes about "
            f"{_size(self.total_bytes)} ({self.storage}, {_size(self.total_bytes / max(self.lines, 1))} a "
            f"line), and joining its batches needs about {_size(self.needed_bytes)} free; {self.folder} has "
            f"{_size(self.free_bytes)} free."
        )

    def refusal(self) -> Optional[str]:
        if self.needed_bytes <= self.free_bytes:
            return None
        return (
            f"maelmo-embed needs about {_size(self.needed_bytes)} free in {self.folder} (OUTPUT about "
            f"{_size(self.total_bytes)}: {self.lines:,} lines, {self.positions}, {self.shape} each, "
            f"{self.storage}; its batches are joined into it before they are removed), and it has "
            f"{_size(self.free_bytes)}: free space, or write less with --layer, --pool or --storage float16 "
            f"(docs/embedding.md gives the bytes per line of each)."
        )


def measure_output(
    predictor: RepresentationsPredictor,
    input_file: str,
    lines_range: range,
    storage: str,
    window_size: int,
    output_file: str,
    written_bytes: int = 0,
) -> OutputSize:
    """
    The size of the output of `lines_range` (0-based) of `input_file` with `predictor`'s settings: the lines are
    tokenized as the run tokenizes them, `window_size` at a time, so a bad line is refused here, before any
    vector is computed.
    """
    positions = vector_bytes = overhead = lines = 0
    shape: tuple[int, ...] = ()
    for sentence, instance in _instances(predictor, input_file, lines_range, window_size):
        shape = predictor.vector_shape(instance)
        count = 1
        for size in shape:
            count *= size
        vector_bytes += count * ITEM_SIZE[storage]
        # Shape: ([L + 1,] [positions,] dim): the positions are there unless a line is one vector.
        positions += 0 if predictor.settings["pool"] == "sentence" else shape[-2]
        tokens = predictor.listed_tokens(instance)
        overhead += BYTES_PER_LINE + sum(BYTES_PER_TOKEN + _rounded(len(token.encode())) for token in tokens)
        overhead += len(sentence.encode()) + 16  # its entry in `sentence_to_index`
        lines += 1
    folder = os.path.dirname(os.path.abspath(output_file))
    return OutputSize(
        lines=lines,
        positions=_positions_words(positions, predictor),
        shape=_shape_words(shape, predictor),
        storage=storage,
        vector_bytes=vector_bytes,
        total_bytes=vector_bytes + overhead + BYTES_PER_FILE,
        written_bytes=written_bytes,
        free_bytes=shutil.disk_usage(folder).free,
        folder=folder,
    )


@dataclass(frozen=True)
class RowVectorsSize:
    """
    `maelmo-ray-embed`'s Parquet output, counted before Ray starts: one float32 vector a row and its id. Written
    without a dictionary for the vectors, Parquet stores them in their own 4 bytes a value (1.003 times them in
    a file of 256 rows of 768 values, where pyarrow's default dictionary made it 1.56 times: float32 values
    neither repeat nor compress), beside the ids and a few KB of structure per file; the estimate takes the
    ids' own bytes and rounds the rest up.
    """

    rows: int
    dim: int
    total_bytes: int
    written_bytes: int  # the Parquet files a stopped job already wrote
    free_bytes: int
    folder: str

    @property
    def needed_bytes(self) -> int:
        return max(0, self.total_bytes - self.written_bytes)

    def statement(self) -> str:
        return (
            f"maelmo-ray-embed: {self.rows:,} rows, one vector of {self.dim} float32 values each: OUTPUT takes "
            f"about {_size(self.total_bytes)} ({_size(self.total_bytes / max(self.rows, 1))} a row); "
            f"{self.folder} has {_size(self.free_bytes)} free."
        )

    def refusal(self) -> Optional[str]:
        if self.needed_bytes <= self.free_bytes:
            return None
        return (
            f"maelmo-ray-embed needs about {_size(self.needed_bytes)} free in {self.folder} (OUTPUT about "
            f"{_size(self.total_bytes)}: {self.rows:,} rows, one vector of {self.dim} float32 values each), and it "
            f"has {_size(self.free_bytes)}: free space, or embed the rows in parts, each into its own folder."
        )


def measure_row_vectors(ids: Any, dim: int, output_dir: str, written_bytes: int = 0) -> RowVectorsSize:
    """The output of one `dim`-value vector for each of `ids` (a pyarrow array of the rows' ids)."""
    import pyarrow
    import pyarrow.compute

    rows = len(ids)
    if pyarrow.types.is_string(ids.type) or pyarrow.types.is_large_string(ids.type):
        id_bytes = int(pyarrow.compute.sum(pyarrow.compute.binary_length(ids)).as_py() or 0) + 4 * rows
    else:
        id_bytes = 8 * rows
    folder = os.path.abspath(output_dir)
    while not os.path.isdir(folder):  # the output folder, or the nearest folder above it that exists
        folder = os.path.dirname(folder)
    return RowVectorsSize(
        rows=rows,
        dim=dim,
        total_bytes=rows * 4 * dim * 101 // 100
        + id_bytes
        + BYTES_PER_PARQUET_FILE * -(-rows // ROWS_PER_PARQUET_FILE),
        written_bytes=written_bytes,
        free_bytes=shutil.disk_usage(folder).free,
        folder=folder,
    )


def check_output_size(size: Union[OutputSize, RowVectorsSize]) -> None:
    refusal = size.refusal()
    if refusal:
        raise Refusal(refusal)


def _instances(
    predictor: RepresentationsPredictor, input_file: str, lines_range: range, window_size: int
) -> Iterator[tuple[str, Instance]]:
    with read_lines(input_file) as lines:
        wanted: Iterable[tuple[int, str]] = ((number - 1, line) for number, line in lines)
        for window in lazy_groups_of((item for item in wanted if item[0] in lines_range), window_size):
            sentences = [line.strip() for _, line in window]
            where = [f"line {index + 1} of {input_file}" for index, _ in window]
            yield from zip(sentences, predictor.sentence_instances(sentences, where))


def _positions_words(count: int, predictor: RepresentationsPredictor) -> str:
    if predictor.settings["pool"] == "sentence":
        return "one vector a line"
    return f"{count:,} {'words' if predictor.pools else 'word-pieces'}"


def _shape_words(shape: tuple[int, ...], predictor: RepresentationsPredictor) -> str:
    if not shape:
        return "nothing"
    layers = [f"{shape[0]} layers"] if predictor.settings["layer"] is None else []
    return " x ".join([*layers, f"{shape[-1]} values"])


def _rounded(size: int) -> int:
    return -(-max(size, 1) // 8) * 8


def _size(count: float) -> str:
    """Bytes in decimal units, as `df -H` and disk makers give them."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if count < 1000:
            return f"{count:,.0f} {unit}" if unit == "bytes" else f"{count:,.1f} {unit}"
        count /= 1000
    return f"{count:,.1f} TB"
