"""
Reads a plain-text pre-training corpus into word-piece ids, paragraph by paragraph, document by document
(finding the files and documents is `corpus_files`'s part).
"""

import itertools
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Optional, Union

from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.dataset_reader import DatasetReader
from allennlp.data.fields import TextField
from allennlp.data.instance import Instance
from allennlp.data.token_indexers import TokenIndexer
from allennlp.data.tokenizers import Token, Tokenizer
from allennlp.data.tokenizers.sentence_splitter import SentenceSplitter

from maelmo_declarations.shards import Shard
from maelmo_files.common.special_tokens import CLS, SEP
from maelmo_plugin.common.wordpiece import WordpieceTokenizer, wordpiece_id_indexer
from maelmo_plugin.lm.dataset_readers.corpus_files import CorpusBlock, DocumentIndex, ReadStats
from maelmo_plugin.lm.dataset_readers.sentencizer import Sentencizer, splitter_setting

logger = logging.getLogger(__name__)

# Paragraphs are split and tokenized in batches of this many (across documents): large enough for spaCy's
# and the Rust tokenizer's batching to pay off, however short the documents, small enough that a file with
# no document boundary at all never has to sit in memory in one piece.
_PARAGRAPHS_PER_BATCH = 256
# A longer paragraph is sentence-split in pieces of at most this many characters, cut at whitespace: a spaCy
# pipeline refuses a text over its `nlp.max_length` (1,000,000 characters), and its memory grows with the text.
# The default splitter has neither limit, but cuts at the same places, so that its stores are the spaCy ones.
MAX_SPLIT_CHARACTERS = 100_000
# The tokenizer is called on at most about this many characters at once: a call holds all its Rust
# encodings (ids, offsets, piece strings) together, gigabytes for one 50 MB paragraph.
_CHARACTERS_PER_TOKENIZER_CALL = 1_000_000


@DatasetReader.register("maelmo_mlm_corpus")
class MlmCorpusReader(DatasetReader):
    """
    Reads a plain-text corpus for masked language modelling, as Masked ELMo is pre-trained
    ([Senay & Salin, 2020](https://arxiv.org/abs/2010.04302), section 3.3).

    The corpus is one or more UTF-8 files with one paragraph per line. Documents are separated by blank
    lines or, with `document_start_pattern`, start at every line matching a regular expression. Each
    paragraph becomes `[CLS] s1 [SEP] s2 [SEP] ... sn [SEP]` in word-pieces. A paragraph over
    `MAX_SPLIT_CHARACTERS` (100,000) is sentence-split in pieces cut at whitespace, with a warning naming its
    file and line.

    This is all a reader does here. Pre-training reads the corpus through the `maelmo_btbptt` data loader,
    which tokenizes it once, block by block (`document_blocks()`, `block_ids()`), into a token store (or
    opens one prepared by `allennlp maelmo-prepare`) and alone decides the document order, the windows and
    which worker reads what. `read()` gives one `Instance` per paragraph (a `TextField` named `"tokens"`),
    in corpus order, sharded by document across distributed and data-loader workers, for a generic data loader;
    `text_to_instance()` does the same for one paragraph (predictors).

    Files are streamed (`corpus_files.py`): only a record per block of about a MB, and one block's text
    at a time, are held in memory, never anything per document, and `allennlp maelmo-prepare --processes N`
    tokenizes N blocks at once.

    Registered as a `DatasetReader` with name "maelmo_mlm_corpus".

    # Parameters

    tokenizer : `WordpieceTokenizer`
        Splits sentences into word-pieces and gives their ids: `{"type": "maelmo_wordpiece", "vocab": ...}`.
    document_start_pattern : `str`, optional (default = `None`)
        By default blank lines separate documents. If a regular expression is given, a document starts
        at each line that matches it (searched in the line without its line break, so `^` and `$`
        anchor the whole line), the matching line is the document's first paragraph, and blank lines
        are ignored. For WikiText, whose articles start with a title line such as ` = Robert Boulter = `,
        use `"^ = [^=].* = $"`. Lines before the first match form a document of their own.
    sentence_splitter : `SentenceSplitter`, optional (default = `None`)
        Splits paragraphs into sentences. `None` gives the sentences of spaCy's rule-based sentencizer on a
        blank English pipeline (`{"type": "spacy", "language": "blank:en", "rule_based": true}`, no model to
        download) through `{"type": "maelmo_sentencizer"}`, which finds the same sentences about ten times
        faster. Another splitter gives other sentences, so a token store records it (`reader_settings`).
    skip_undecodable_lines : `bool`, optional (default = `False`)
        Skip lines that are not valid UTF-8, and log how many were skipped, instead of failing.
    token_indexers : `Dict[str, TokenIndexer]`, optional (default = `None`)
        `None` means `{"tokens": SingleIdTokenIndexer(namespace=None, feature_name="text_id")}`: the
        word-piece ids go straight into the tensor, with no vocabulary look-up per token.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        document_start_pattern: Optional[str] = None,
        sentence_splitter: Optional[SentenceSplitter] = None,
        skip_undecodable_lines: bool = False,
        token_indexers: Optional[dict[str, TokenIndexer]] = None,
        **kwargs,
    ) -> None:
        super().__init__(manual_distributed_sharding=True, manual_multiprocess_sharding=True, **kwargs)
        # `tokenizer` is annotated with the base class so that a config names it with its "type" as usual
        # (FromParams reads "type" only for a registrable base class); it must still be a word-piece one.
        if not isinstance(tokenizer, WordpieceTokenizer):
            raise ConfigurationError(
                f"The maelmo_mlm_corpus reader needs a word-piece tokenizer, got {type(tokenizer).__name__}: "
                f'use "tokenizer": {{"type": "maelmo_wordpiece", "vocab": ...}}.'
            )
        self._tokenizer = tokenizer
        self._documents = DocumentIndex(document_start_pattern, skip_undecodable_lines)
        # Built at the first split (`sentence_splitter`): loading an archive builds its readers, and a
        # command that only embeds sentences never splits a paragraph.
        self._sentence_splitter = sentence_splitter
        self._token_indexers = token_indexers or {"tokens": wordpiece_id_indexer()}
        self._cls_id = tokenizer.token_id(CLS)
        self._sep_id = tokenizer.token_id(SEP)

    @property
    def tokenizer(self) -> WordpieceTokenizer:
        return self._tokenizer

    @property
    def sentence_splitter(self) -> SentenceSplitter:
        if self._sentence_splitter is None:
            # spaCy's "blank:en" tokenizer rules, built into spaCy, so nothing is downloaded.
            self._sentence_splitter = Sentencizer()
        return self._sentence_splitter

    @property
    def sentence_splitter_setting(self) -> Optional[dict]:
        """How a token store records this reader's sentences (`splitter_setting`), without building a splitter."""
        return splitter_setting(self._sentence_splitter)

    @property
    def document_start_pattern(self) -> Optional[str]:
        return self._documents.document_start_pattern

    def _read(self, file_path: Union[str, os.PathLike, Sequence[str]]) -> Iterator[Instance]:
        stats = ReadStats()
        shares, mine = self._share()
        for _, ids in self._numbered_paragraphs(file_path, stats, lambda document: document % shares == mine):
            yield self._ids_to_instance(ids)
        self._log_stats(stats)

    def paragraphs_by_document(
        self, file_path: Union[str, os.PathLike, Sequence[str]]
    ) -> Iterator[tuple[int, list[int]]]:
        """
        `(document_index, ids)` for every paragraph of the corpus, in the corpus's own order: the
        `[CLS] s1 [SEP] ...` word-piece ids of each. Only one block of text is held at a time.
        """
        stats = ReadStats()
        yield from self._numbered_paragraphs(file_path, stats)
        self._log_stats(stats)

    def document_blocks(
        self,
        file_path: Union[str, os.PathLike, Sequence[str]],
        stats: Optional[ReadStats] = None,
        shard: Optional[Shard] = None,
    ) -> list[CorpusBlock]:
        """
        The corpus in blocks of about `BLOCK_BYTES` (cut at line ends), in order: the units of a parallel
        tokenization (`block_ids`). One per MB of text, whatever the number of documents. With `shard`, the
        blocks of that part of the corpus only (`DocumentIndex.part_blocks`). This pass is the one that meets
        the lines that are not UTF-8: without `stats` to count them into, it logs how many it skipped.
        """
        counted = stats if stats is not None else ReadStats()
        if shard is not None:
            blocks = self._documents.part_blocks(file_path, shard, counted)
        else:
            blocks = self._documents.blocks(file_path, counted)
        if stats is None:
            _log_skipped(counted)
        return blocks

    def block_ids(
        self, block: CorpusBlock, stats: Optional[ReadStats] = None
    ) -> Iterator[tuple[int, list[int]]]:
        """
        `(document, ids)` for every paragraph of one block of `document_blocks()`: `document` is how many
        documents the block has opened up to the paragraph (0: the document open where the block starts),
        `ids` its `[CLS] s1 [SEP] ...` word-piece ids, empty for a paragraph that has none (so that every
        document the block opens is seen). Tokenizing the blocks one by one gives the ids of the whole corpus.
        """
        return self._tokenized(_checked(self._documents.block_lines(block), block.path), stats or ReadStats())

    def text_to_instance(self, text: str) -> Instance:
        """One paragraph, in the same `[CLS] s1 [SEP] ... sn [SEP]` layout, not windowed (for predictors)."""
        ids = self._paragraph_ids([text.strip()])[0] if text.strip() else []
        if not ids:
            raise ValueError(f"The text {text!r} has no word-pieces; give a non-empty paragraph.")
        return self._ids_to_instance(ids)

    def apply_token_indexers(self, instance: Instance) -> None:
        field = instance.fields["tokens"]
        assert isinstance(field, TextField), "'tokens' is not a field of this reader's instances"
        field.token_indexers = self._token_indexers

    def _ids_to_instance(self, ids: list[int]) -> Instance:
        pieces = self._tokenizer.ids_to_pieces(ids)
        tokens = [Token(text=piece, text_id=piece_id) for piece, piece_id in zip(pieces, ids)]
        return Instance({"tokens": TextField(tokens)})

    def _share(self) -> tuple[int, int]:
        """
        (shares, mine): this worker reads the documents whose index is `mine` modulo `shares`, whole.
        AllenNLP's `shard_iterable` is not used: its `max_instances` cap would count lines; `read()` applies
        it to the instances.
        """
        shares = 1
        mine = 0
        distributed = self.get_distributed_info()
        if distributed is not None:
            shares, mine = distributed.world_size, distributed.global_rank
        worker = self.get_worker_info()
        if worker is not None:
            mine, shares = mine * worker.num_workers + worker.id, shares * worker.num_workers
        return shares, mine

    def _numbered_paragraphs(
        self,
        file_path: Union[str, os.PathLike, Sequence[str]],
        stats: ReadStats,
        keep: Callable[[int], bool] = lambda document: True,
    ) -> Iterator[tuple[int, list[int]]]:
        """
        `(document_index, ids)` of every paragraph with word-pieces, the documents numbered from 0 across the
        corpus; only the paragraphs of the documents that `keep` accepts are tokenized.
        """
        last = -1  # the index of the last document opened
        for block in self.document_blocks(file_path, stats):
            before = last
            lines = []
            for document, line_number, text in self._documents.block_lines(block):
                last = before + document
                if keep(last):
                    lines.append((last, line_number, text))
            for document, ids in self._tokenized(_checked(iter(lines), block.path), stats):
                if ids:
                    yield document, ids

    def _tokenized(
        self, lines: Iterator[tuple[int, str]], stats: ReadStats
    ) -> Iterator[tuple[int, list[int]]]:
        """`(document, ids)` of each `(document, paragraph)`, tokenized `_PARAGRAPHS_PER_BATCH` at a time."""
        while batch := list(itertools.islice(lines, _PARAGRAPHS_PER_BATCH)):
            for (document, _), ids in zip(batch, self._paragraph_ids([text for _, text in batch])):
                if ids:
                    stats.paragraphs += 1
                    stats.wordpieces += len(ids)
                yield document, ids

    def _paragraph_ids(self, paragraphs: list[str]) -> list[list[int]]:
        """
        `[CLS] s1 [SEP] s2 [SEP] ... sn [SEP]` for each paragraph, with one batched call each to the sentence
        splitter and the tokenizer. The paper separates sentences with [SEP]; we also close the last one,
        so that every paragraph (and so every document) ends on a boundary the model can see.
        """
        sentences_per_paragraph = self._split_sentences(paragraphs)
        flat = [sentence for sentences in sentences_per_paragraph for sentence in sentences]
        flat_ids = self._batch_ids(flat)
        result = []
        for sentences in sentences_per_paragraph:
            ids = [self._cls_id]
            for sentence_ids in itertools.islice(flat_ids, len(sentences)):
                if sentence_ids:  # e.g. a "sentence" of control characters only
                    ids.extend(sentence_ids)
                    ids.append(self._sep_id)
            # A paragraph with no word-piece at all is dropped rather than left as a lone [CLS].
            result.append(ids if len(ids) > 1 else [])
        return result

    def _batch_ids(self, sentences: list[str]) -> Iterator[list[int]]:
        group: list[str] = []
        characters = 0
        for sentence in sentences:
            group.append(sentence)
            characters += len(sentence)
            if characters >= _CHARACTERS_PER_TOKENIZER_CALL:
                yield from self._tokenizer.batch_ids(group)
                group, characters = [], 0
        if group:
            yield from self._tokenizer.batch_ids(group)

    def _split_sentences(self, paragraphs: list[str]) -> list[list[str]]:
        """The sentences of each paragraph; one of over `MAX_SPLIT_CHARACTERS` is split piece by piece."""
        short = [paragraph for paragraph in paragraphs if len(paragraph) <= MAX_SPLIT_CHARACTERS]
        short_sentences = iter(self.sentence_splitter.batch_split_sentences(short) if short else [])
        return [
            next(short_sentences) if len(paragraph) <= MAX_SPLIT_CHARACTERS else self._split_long(paragraph)
            for paragraph in paragraphs
        ]

    def _split_long(self, paragraph: str) -> list[str]:
        # One piece at a time, so that the splitter never holds more than one piece's analysis.
        return [
            sentence
            for piece in _cut_at_whitespace(paragraph, MAX_SPLIT_CHARACTERS)
            for sentence in self.sentence_splitter.split_sentences(piece)
        ]

    def _log_stats(self, stats: ReadStats) -> None:
        logger.info(
            "Read %d file(s): %d documents, %d paragraphs, %d word-pieces.",
            stats.files,
            stats.documents,
            stats.paragraphs,
            stats.wordpieces,
        )
        _log_skipped(stats)


def _log_skipped(stats: ReadStats) -> None:
    if stats.skipped_lines:
        details = ", ".join(f"{path}: {count}" for path, count in stats.skipped_lines.items())
        logger.warning(
            "Skipped %d line(s) that are not valid UTF-8 (%s).", sum(stats.skipped_lines.values()), details
        )


def _checked(lines: Iterator[tuple[int, int, str]], path: str) -> Iterator[tuple[int, str]]:
    """`(document, text)` of each `(document, line_number, text)`, with a warning for a paragraph too long."""
    for document, line_number, text in lines:
        _warn_if_long(text, path, line_number)
        yield document, text


def _warn_if_long(paragraph: str, path: str, line_number: int) -> None:
    if len(paragraph) > MAX_SPLIT_CHARACTERS:
        logger.warning(
            "%s, line %d: a paragraph of %d characters. It is sentence-split in pieces of at most %d "
            "characters cut at whitespace, so a sentence that crosses a cut gets an extra [SEP]. Is the file "
            "one paragraph per line?",
            path,
            line_number,
            len(paragraph),
            MAX_SPLIT_CHARACTERS,
        )


def _cut_at_whitespace(text: str, limit: int) -> Iterator[str]:
    """`text` in pieces of at most `limit` characters, each cut at its last space or tab (or at `limit`)."""
    start = 0
    while len(text) - start > limit:
        window = (start + 1, start + limit + 1)
        cut = max(text.rfind(" ", *window), text.rfind("\t", *window))
        end = cut if cut > start else start + limit
        yield text[start:end]
        start = end
    yield text[start:]
