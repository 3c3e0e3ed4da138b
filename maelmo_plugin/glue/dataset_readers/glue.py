"""
Reads the GLUE benchmark's TSV files, in the layouts written by GLUE's `download_glue_data.py`.

GLUE TSVs are split on tabs only: they are not CSV-quoted, and a field may begin with a double quote
(CSV readers with default quoting silently merge such rows with the next ones and lose rows).
"""

import itertools
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Optional, Union

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path
from allennlp.data.dataset_readers.dataset_reader import DatasetReader
from allennlp.data.fields import Field, LabelField, MetadataField, TensorField, TextField
from allennlp.data.instance import Instance
from allennlp.data.token_indexers import SingleIdTokenIndexer, TokenIndexer
from allennlp.data.tokenizers import Token, Tokenizer, WhitespaceTokenizer

from maelmo_files.common.special_tokens import CLS, SEP
from maelmo_files.common.text_files import read_lines
from maelmo_plugin.common.wordpiece import WordpieceTokenizer, wordpiece_id_indexer
from maelmo_plugin.glue.tasks import GLUE_TASKS, STSB_MAX_SCORE, GlueTask, resolve_glue_task

logger = logging.getLogger(__name__)

# The first column of GLUE's test files (and of some train/dev files) is a row id with one of these names.
INDEX_COLUMNS = ("index", "id")
_ALL_LABEL_COLUMNS = {column for task in GLUE_TASKS.values() for column in task.label_columns} | {"label1"}


@dataclass(frozen=True)
class _Layout:
    """Where the columns of one file are: positions in a row split on tabs."""

    columns: tuple[str, ...]
    sentences: tuple[int, ...]
    label: Optional[int]
    index: Optional[int]
    has_header: bool


class _MalformedRow(Exception):
    def __init__(self, column: str, problem: str) -> None:
        super().__init__(f"{column}: {problem}")
        self.column = column
        self.problem = problem


class _FileStats:
    def __init__(self) -> None:
        self.instances = 0
        self.sentences = 0
        self.truncated = 0
        self.skipped = 0
        self.first_skip: Optional[str] = None

    def skip(self, line_number: int, error: _MalformedRow) -> None:
        self.skipped += 1
        if self.first_skip is None:
            self.first_skip = f"line {line_number}, {error}"


@DatasetReader.register("maelmo_glue")
class GlueReader(DatasetReader):
    """
    Reads any GLUE task's train, dev or test TSV, as written by GLUE's `download_glue_data.py`, for
    the supervised experiments of Masked ELMo
    ([Senay & Salin, 2020](https://arxiv.org/abs/2010.04302), section 4).

    Columns are found by their header names, so MNLI's 12-column train file and 16-column dev files
    read alike; CoLA's train/dev files have no header (source, label, original-label marker, sentence).
    A file whose header has an `index`/`id` first column and no label column is a test file. Training and
    evaluation need labels, so reading one is an error unless `allow_unlabelled` is set, as the
    `maelmo_glue` predictor does: then its instances have no `"label"` field (logged once per file).

    Each instance has:

    - single-sentence tasks (CoLA, SST-2): `"tokens"`, a `TextField`;
    - sentence-pair tasks: `"premise"` and `"hypothesis"`, two `TextField`s (the model encodes them
      separately, as in the paper's bi-attention architecture);
    - `"label"` (not in test files): a `LabelField` in namespace `"labels"` (values "0"/"1",
      entailment/neutral/contradiction or entailment/not_entailment), or for STS-B a scalar
      `TensorField` holding the similarity score divided by 5 (jiant trains STS-B as regression on
      score / 5);
    - `"metadata"`: `{"index": ..., "line": ...}`, the file's `index`/`id` column (an `int` when
      numeric) or else the 0-based data row number, and the 1-based line number (`None` from
      `text_to_instance`).

    A malformed row (wrong number of columns, unknown label, empty sentence, unparsable score) stops
    the read with an error naming the file, the line and the column, unless `skip_malformed_rows` is
    set; skipped rows are counted and reported in a warning at the end of each file. The GLUE files
    themselves have no malformed rows, so on them the reader yields exactly the published row counts.

    Rows, not files, are sharded across distributed processes and data-loader workers.

    Registered as a `DatasetReader` with name "maelmo_glue".

    NOTE: with `skip_malformed_rows`, a skipped row still counts towards the `max_instances` cap of
    `DatasetReader.shard_iterable`, so a capped read may yield a few fewer instances than the cap.

    # Parameters

    task : `str`
        cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli or ax, or the GLUE folder spelling
        (CoLA, SST-2, STS-B, ...), in any case.
    tokenizer : `Tokenizer`, optional (default = `None`)
        Splits each sentence. `None` means AllenNLP's `WhitespaceTokenizer`, which only suits
        pre-tokenized text; for Masked ELMo give the pre-training word-pieces, wrapped as a one-sentence
        paragraph: `{"type": "maelmo_wordpiece", "vocab": ..., "add_special_tokens": true}`.
    token_indexers : `Dict[str, TokenIndexer]`, optional (default = `None`)
        `None` means `{"tokens": wordpiece_id_indexer()}` with a `WordpieceTokenizer` (ids copied from
        `Token.text_id`, no vocabulary look-up), else `{"tokens": SingleIdTokenIndexer()}`.
    skip_malformed_rows : `bool`, optional (default = `False`)
        Skip malformed rows (counted, and logged per file) instead of failing.
    max_tokens : `int`, optional (default = `None`)
        Truncate each sentence so that its `TextField` has at most this many tokens, special tokens
        included: a sentence the tokenizer wraps as `[CLS] ... [SEP]` (`"add_special_tokens": true`
        of `maelmo_wordpiece`, the layout Masked ELMo is pre-trained on) keeps its final [SEP].
        Truncated sentences are counted and logged per file.
    allow_unlabelled : `bool`, optional (default = `False`)
        Read GLUE's unlabelled test files (instances without `"label"`) instead of refusing them. The
        `maelmo_glue` predictor sets it on the reader it is given.
    """

    def __init__(
        self,
        task: str,
        tokenizer: Optional[Tokenizer] = None,
        token_indexers: Optional[dict[str, TokenIndexer]] = None,
        skip_malformed_rows: bool = False,
        max_tokens: Optional[int] = None,
        allow_unlabelled: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(manual_distributed_sharding=True, manual_multiprocess_sharding=True, **kwargs)
        self._task = resolve_glue_task(task)
        self._tokenizer = tokenizer or WhitespaceTokenizer()
        is_wordpiece = isinstance(self._tokenizer, WordpieceTokenizer)
        default_indexer = wordpiece_id_indexer() if is_wordpiece else SingleIdTokenIndexer()
        self._token_indexers = token_indexers or {"tokens": default_indexer}
        self._skip_malformed_rows = skip_malformed_rows
        # Special tokens are the tokenizer's business; the reader only has to keep [SEP] when truncating.
        self._wraps = _wraps_in_cls_and_sep(self._tokenizer)
        self._max_tokens = _check_max_tokens(max_tokens, self._wraps)
        self.allow_unlabelled = allow_unlabelled
        # Test files are reported once per reader, not at every epoch's read.
        self._reported_unlabelled: set[str] = set()

    @property
    def task(self) -> GlueTask:
        return self._task

    def _read(self, file_path: str) -> Iterator[Instance]:
        path = cached_path(file_path)
        stats = _FileStats()
        # The file may be gzip, bzip2 or xz. `read_lines` drops a byte-order mark (MRPC's header is copied
        # from a file that has one); lines end at "\n" only, never at a stray "\r" inside a field; a line
        # that is not UTF-8 is an error naming the file and the line.
        with read_lines(path, ConfigurationError) as lines:
            # Blank lines are not rows (a file may end with one); every other line is.
            numbered = ((number, line.rstrip("\r\n")) for number, line in lines if line.strip("\r\n"))
            first = next(numbered, None)
            if first is None:
                raise ConfigurationError(f"{path} is empty; expected a GLUE {self._task.folder} TSV file.")
            layout = self._layout(first[1].split("\t"), path, first[0])
            rows = numbered if layout.has_header else itertools.chain([first], numbered)
            self._report_unlabelled(layout, path)
            for row, (line_number, line) in self.shard_iterable(enumerate(rows)):
                instance = self._row_to_instance(line, layout, row, path, line_number, stats)
                if instance is not None:
                    stats.instances += 1
                    yield instance
        self._log_stats(path, stats)

    def text_to_instance(
        self, *sentences: str, label: Optional[Union[str, float]] = None, index=None
    ) -> Instance:
        """
        One instance from raw sentences (one, or two for pair tasks), for predictors. `label` is
        optional; for STS-B it is the raw 0-5 score, divided by 5 as in the files.
        """
        if len(sentences) != len(self._task.sentence_columns):
            raise ValueError(
                f"The {self._task.name} task takes {len(self._task.sentence_columns)} sentence(s), "
                f"got {len(sentences)}."
            )
        try:
            tokens = [self._tokenize(sentence, f"sentence {n}")[0] for n, sentence in enumerate(sentences, 1)]
            value = None if label is None else self._parse_label(str(label), "label")
        except _MalformedRow as error:
            raise ValueError(str(error)) from None
        return self._make_instance(tokens, value, {"index": index, "line": None})

    def apply_token_indexers(self, instance: Instance) -> None:
        for name in self._task.field_names:
            field = instance.fields[name]
            assert isinstance(field, TextField), f"{name!r} is not a field of this reader's instances"
            field.token_indexers = self._token_indexers

    def _layout(self, first_row: list[str], path: str, line_number: int) -> _Layout:
        """Finds the columns from the header, or from the fixed layout of a file without one (CoLA)."""
        names = tuple(name.strip() for name in first_row)
        headerless = self._task.headerless_columns
        if headerless is not None and not self._is_header(names):
            return self._find_columns(headerless, f"{path} (no header)", has_header=False)
        return self._find_columns(names, f"{path}, line {line_number} (header)", has_header=True)

    def _is_header(self, names: tuple[str, ...]) -> bool:
        lowered = [name.lower() for name in names]
        return lowered[0] in INDEX_COLUMNS or any(label in lowered for label in self._task.label_columns)

    def _find_columns(self, names: tuple[str, ...], where: str, has_header: bool) -> _Layout:
        lowered = [name.lower() for name in names]
        sentences = []
        for aliases in self._task.sentence_columns:
            position = _position(lowered, aliases)
            if position is None:
                raise ConfigurationError(
                    f"{where}: no {aliases[0]!r} column in {list(names)}; the {self._task.folder} task needs "
                    f"it. Is this a {self._task.folder} file, and is `task` right?"
                )
            sentences.append(position)
        label = _position(lowered, self._task.label_columns)
        index = 0 if lowered[0] in INDEX_COLUMNS else None
        foreign_labels = [name for name in names if name.lower() in _ALL_LABEL_COLUMNS]
        if label is None and foreign_labels:
            # e.g. an MNLI file (gold_label) read as RTE (label): not a test file, but the wrong task.
            raise ConfigurationError(
                f"{where}: no {self._task.label_columns[0]!r} column, but the label column(s) "
                f"{foreign_labels} of another GLUE task. Is this a {self._task.folder} file, and is "
                f"`task` right?"
            )
        if label is None and index is None:
            raise ConfigurationError(
                f"{where}: no {self._task.label_columns[0]!r} column (train/dev files) and no "
                f"index/id first column (test files) in {list(names)}. Is this a {self._task.folder} file?"
            )
        return _Layout(names, tuple(sentences), label, index, has_header)

    def _report_unlabelled(self, layout: _Layout, path: str) -> None:
        if layout.label is not None:
            return
        if not self.allow_unlabelled:
            # Without this, training fails later with AllenNLP's "does not contain a 'loss' key", and
            # `allennlp evaluate` reports empty metrics, neither naming the file.
            raise ConfigurationError(
                f"{path} has no {self._task.label_columns[0]!r} column: it looks like GLUE's unlabelled test "
                f"file, and training and `allennlp evaluate` need labels (train.tsv or a dev file). To "
                f"predict a test file's labels, use `allennlp predict model.tar.gz {path} "
                f"--use-dataset-reader --predictor maelmo_glue --output-file <task>.tsv`."
            )
        if path not in self._reported_unlabelled:
            self._reported_unlabelled.add(path)
            logger.info("%s has no label column (a test file): its instances have no 'label' field.", path)

    def _row_to_instance(
        self, line: str, layout: _Layout, row: int, path: str, line_number: int, stats: _FileStats
    ) -> Optional[Instance]:
        try:
            fields = _split(line, layout)
            tokens, truncated = self._row_tokens(fields, layout)
            label = None
            if layout.label is not None:
                label = self._parse_label(fields[layout.label], f"column {layout.columns[layout.label]!r}")
        except _MalformedRow as error:
            if not self._skip_malformed_rows:
                raise ConfigurationError(
                    f"{path}, line {line_number}, {error}. Fix the row, or set `skip_malformed_rows: true` "
                    f"in the dataset reader to skip such rows (they are counted and logged)."
                ) from None
            stats.skip(line_number, error)
            return None
        stats.sentences += len(tokens)
        stats.truncated += truncated
        index = _index_value(fields[layout.index]) if layout.index is not None else row
        return self._make_instance(tokens, label, {"index": index, "line": line_number})

    def _row_tokens(self, fields: list[str], layout: _Layout) -> tuple[list[list[Token]], int]:
        """The tokens of each sentence of a row, and how many of its sentences were truncated."""
        tokens, truncated = [], 0
        for position in layout.sentences:
            column = f"column {layout.columns[position]!r}"
            sentence_tokens, was_truncated = self._tokenize(fields[position], column)
            tokens.append(sentence_tokens)
            truncated += was_truncated
        return tokens, truncated

    def _tokenize(self, sentence: str, column: str) -> tuple[list[Token], bool]:
        if not sentence.strip():
            raise _MalformedRow(column, "the sentence is empty")
        tokens = self._tokenizer.tokenize(sentence)
        if len(tokens) <= (2 if self._wraps else 0):
            raise _MalformedRow(column, f"the sentence {sentence!r} has no tokens")
        max_tokens = self._max_tokens
        truncated = max_tokens is not None and len(tokens) > max_tokens
        if max_tokens is not None and truncated:
            # A wrapped sentence keeps its closing special token.
            tokens = tokens[: max_tokens - 1] + tokens[-1:] if self._wraps else tokens[:max_tokens]
        return tokens, truncated

    def _parse_label(self, raw: str, column: str) -> Union[str, float]:
        text = raw.strip()
        if self._task.labels is not None:
            if text not in self._task.labels:
                raise _MalformedRow(column, f"the label {raw!r} is not one of {list(self._task.labels)}")
            return text
        try:
            score = float(text)
        except ValueError:
            raise _MalformedRow(column, f"the score {raw!r} is not a number") from None
        # Written so that NaN fails too.
        if not 0.0 <= score <= STSB_MAX_SCORE:
            raise _MalformedRow(column, f"the score {raw!r} is outside [0, {STSB_MAX_SCORE:g}]")
        return score

    def _make_instance(
        self, tokens: list[list[Token]], label: Optional[Union[str, float]], metadata: dict[str, object]
    ) -> Instance:
        fields: dict[str, Field] = {
            name: TextField(sentence_tokens) for name, sentence_tokens in zip(self._task.field_names, tokens)
        }
        if label is not None:
            fields["label"] = self._label_field(label)
        fields["metadata"] = MetadataField(metadata)
        return Instance(fields)

    def _label_field(self, label: Union[str, float]) -> Field:
        if self._task.is_regression:
            # Shape: () per instance, so a batch's labels have shape (batch_size,).
            return TensorField(torch.tensor(float(label) / STSB_MAX_SCORE, dtype=torch.float))
        return LabelField(str(label), label_namespace="labels")

    def _log_stats(self, path: str, stats: _FileStats) -> None:
        logger.info("Read %d %s instance(s) from %s.", stats.instances, self._task.folder, path)
        if stats.truncated:
            logger.info(
                "Truncated %d of %d sentence(s) of %s to max_tokens=%s.",
                stats.truncated,
                stats.sentences,
                path,
                self._max_tokens,
            )
        if stats.skipped:
            logger.warning(
                "Skipped %d malformed row(s) of %s (skip_malformed_rows is set); the first: %s.",
                stats.skipped,
                path,
                stats.first_skip,
            )


def _wraps_in_cls_and_sep(tokenizer: Tokenizer) -> bool:
    """Whether the tokenizer adds [CLS] and [SEP] itself (`maelmo_wordpiece` with `add_special_tokens`)."""
    probe = [token.text for token in tokenizer.tokenize("a")]
    return len(probe) >= 2 and probe[0] == CLS and probe[-1] == SEP


def _check_max_tokens(max_tokens: Optional[int], wraps: bool) -> Optional[int]:
    least = 3 if wraps else 1
    if max_tokens is not None and max_tokens < least:
        raise ConfigurationError(
            f"max_tokens must be at least {least}"
            + (" (room for [CLS], one token and [SEP])" if wraps else "")
            + f", got {max_tokens}."
        )
    return max_tokens


def _split(line: str, layout: _Layout) -> list[str]:
    fields = line.split("\t")
    expected = len(layout.columns)
    if len(fields) < expected:
        raise _MalformedRow(
            f"column {layout.columns[len(fields)]!r}",
            f"missing: the row has {len(fields)} tab-separated columns, expected {expected} "
            f"({', '.join(layout.columns)})",
        )
    if len(fields) > expected:
        raise _MalformedRow(
            f"column {expected + 1} (after {layout.columns[-1]!r})",
            f"unexpected: the row has {len(fields)} tab-separated columns, expected {expected} "
            f"({', '.join(layout.columns)})",
        )
    return fields


def _position(names: list[str], aliases: Iterable[str]) -> Optional[int]:
    for alias in aliases:
        if alias in names:
            return names.index(alias)
    return None


def _index_value(raw: str) -> Union[int, str]:
    """GLUE's submission files want integer indices; a non-numeric id is kept as it is."""
    text = raw.strip()
    return int(text) if text.isdigit() else text
