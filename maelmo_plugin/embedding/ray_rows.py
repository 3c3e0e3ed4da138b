"""
The rows the Ray command reads (`ray_data.py`), checked before Ray starts: JSON lines or Parquet of `id` and
`text`, one file or a directory of them. Each is streamed with pyarrow (only the ids are kept, to find
repeats), so a bad row is one line naming its file and row instead of a failure inside an actor, after Ray
and the model have started.
"""

import os
from typing import Any

from maelmo_declarations.refusals import Refusal

ID, TEXT = "id", "text"
PARQUET, JSON_LINES = (".parquet", ".pq"), (".jsonl", ".json", ".jsonl.gz")


def check_rows(path: str) -> Any:
    """
    Checks `read_rows`'s input before Ray starts, streaming it with pyarrow (only the ids are kept), and
    returns its ids (a pyarrow `ChunkedArray`): a `Refusal` naming the file and the fix for a missing `id` or `text`
    column, a text that is not a string (a null would be embedded as the word "None") or is blank, ids of more than one
    type, null or repeated (each output row is keyed by its id: Ray Data keeps no order), or no row at all.
    """
    import pyarrow
    import pyarrow.compute

    if not os.path.exists(path):
        raise Refusal(f"No such input: {path!r}.")
    read_rows_kind(path)
    id_chunks: list[Any] = []
    for file in _files(path):
        rows = 0
        if os.path.getsize(file) == 0:
            continue  # no row; an input of no row at all is refused below
        try:
            for batch in _batches(file):
                ids = _checked_ids(file, batch, rows, id_chunks[0].type if id_chunks else None)
                id_chunks.append(ids)
                rows += len(ids)
        except (pyarrow.ArrowInvalid, OSError) as error:
            raise Refusal(
                f"{file} cannot be read as {'Parquet' if file.endswith(PARQUET) else 'JSON lines'} "
                f"({str(error).splitlines()[0]}): each row needs an id of one type (all strings or all "
                f"integers) and a text string."
            ) from None
    total = sum(len(chunk) for chunk in id_chunks)
    if total == 0:
        raise Refusal(f"{path} holds no row: give rows of id and text.")
    all_ids = pyarrow.chunked_array(id_chunks)
    if pyarrow.compute.count_distinct(all_ids).as_py() != total:
        counts = pyarrow.compute.value_counts(all_ids)
        repeated = [item["values"] for item in counts.to_pylist() if item["counts"] > 1]
        raise Refusal(
            f"{path}: {len(repeated)} id{'s are' if len(repeated) > 1 else ' is'} repeated (e.g. "
            f"{repeated[0]!r}): each output row is keyed by its id, so ids must be unique."
        )
    return all_ids


def first_text(path: str) -> str:
    """The text of the first row of `check_rows`'s checked input."""
    for file in _files(path):
        if os.path.getsize(file):
            for batch in _batches(file):
                if batch.num_rows:
                    return str(batch.column(TEXT)[0].as_py())
    return ""


def _files(path: str) -> list[str]:
    """The files of the input: itself, or a directory's Parquet and JSON-lines files, in order."""
    if not os.path.isdir(path):
        return [path]
    return [
        os.path.join(path, name) for name in sorted(os.listdir(path)) if name.endswith(PARQUET + JSON_LINES)
    ]


def written_ids(output_dir: str) -> Any:
    """The ids in the Parquet files of `output_dir` (a pyarrow `ChunkedArray`), read as a stream of the column."""
    import pyarrow
    import pyarrow.parquet

    chunks = []
    for name in sorted(os.listdir(output_dir)):
        if name.endswith(PARQUET):
            for batch in pyarrow.parquet.ParquetFile(os.path.join(output_dir, name)).iter_batches(
                columns=[ID]
            ):
                chunks.append(batch.column(ID))
    return pyarrow.chunked_array(chunks) if chunks else None


def _checked_ids(file: str, batch: Any, rows: int, id_type: Any) -> Any:
    """The ids of a record batch whose first row is row `rows` + 1 of `file`, once its columns are checked."""
    import pyarrow
    import pyarrow.compute

    missing = [column for column in (ID, TEXT) if column not in batch.schema.names]
    if missing:
        raise Refusal(
            f"{file} has no {' and no '.join(map(repr, missing))} column (it has {batch.schema.names}): the rows "
            f"need {ID!r} and {TEXT!r}; rename the columns or add ids (e.g. the line number)."
        )
    ids, texts = batch.column(ID), batch.column(TEXT)
    if id_type is not None and ids.type != id_type:
        raise Refusal(
            f"{file}, near row {rows + 1}: ids of type {ids.type} after ids of type {id_type}: give ids of one "
            f"type (all strings or all integers)."
        )
    for values, what in ((ids, "id"), (texts, "text")):
        if values.null_count:
            row = rows + pyarrow.compute.index(pyarrow.compute.is_null(values), True).as_py() + 1
            raise Refusal(
                f"{file}, row {row}: the {what} is null (a null text would be embedded as the word 'None'): give "
                f"every row an id and its sentence, or remove the row."
            )
    if not (pyarrow.types.is_string(texts.type) or pyarrow.types.is_large_string(texts.type)):
        raise Refusal(
            f"{file}: the text column holds {texts.type}, not strings: each row's text is a sentence."
        )
    blank = pyarrow.compute.equal(pyarrow.compute.utf8_trim_whitespace(texts), "")
    if pyarrow.compute.any(blank).as_py():
        row = rows + pyarrow.compute.index(blank, True).as_py() + 1
        raise Refusal(
            f"{file}, row {row}: the text is empty (no word to embed): give every row its sentence, or remove "
            f"the row."
        )
    return ids


def _batches(file: str) -> Any:
    """The record batches of one Parquet or JSON-lines file (gzip too), read as a stream."""
    import pyarrow.json
    import pyarrow.parquet

    if file.endswith(PARQUET):
        return pyarrow.parquet.ParquetFile(file).iter_batches()
    return pyarrow.json.open_json(file)


def read_rows_kind(path: str) -> str:
    """The kind of `read_rows`'s input, "parquet" or "json", or its `ValueError`."""
    name = path.rstrip("/")
    if name.endswith(PARQUET) or (os.path.isdir(path) and _holds(path, PARQUET)):
        return "parquet"
    if name.endswith(JSON_LINES) or (os.path.isdir(path) and _holds(path, (".jsonl", ".json"))):
        return "json"
    raise Refusal(
        f'{path}: give JSON lines ({{"id": ..., "text": ...}} per line, .jsonl) or Parquet with the columns '
        f"id and text (.parquet), a file or a directory of them. A plain text file has no ids: embed it with "
        f"`maelmo maelmo-embed` (and --shard K/N on many machines)."
    )


def _holds(directory: str, suffixes: tuple[str, ...]) -> bool:
    return any(name.endswith(suffixes) for name in os.listdir(directory))
