"""
The `maelmo-vocab` job: trains a BERT-style WordPiece `vocab.txt` on the user's own corpus.

    allennlp maelmo-vocab CORPUS [CORPUS ...] --output-dir DIR [--vocab-size 30000] [--min-frequency 2]
                          [--lowercase] [--force]

The written `vocab.txt` starts with [PAD], [UNK], [CLS], [SEP], [MASK] (ids 0-4), so it can be given as
the `vocab` of the `maelmo_wordpiece` tokenizer and vocabulary. An existing `DIR/vocab.txt` is replaced only
with `--force`, only if maelmo-vocab wrote it (its manifest, `DIR/.vocab.txt.maelmo-output.json`, says so:
`maelmo_declarations/owned_outputs.py`), checked before training, and only by a complete, checked vocabulary.
"""

import argparse
import glob
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator

from tokenizers import BertWordPieceTokenizer

from maelmo_declarations import owned_outputs
from maelmo_declarations.commands import vocab
from maelmo_declarations.commands.vocab import VOCAB_FILE_NAME
from maelmo_declarations.refusals import Refusal, disk_refusal
from maelmo_files.common.special_tokens import REQUIRED_SPECIAL_TOKENS
from maelmo_files.common.text_files import read_lines

logger = logging.getLogger(__name__)


def run(args: argparse.Namespace) -> None:
    """
    Trains a WordPiece vocabulary with HF `tokenizers` on plain-text files (or globs) and writes
    `DIR/vocab.txt`, with the special tokens Masked ELMo needs at ids 0-4. See `train_wordpiece_vocab`.
    """
    vocab_file = train_wordpiece_vocab(
        args.corpus,
        args.output_dir,
        vocab_size=args.vocab_size,
        min_frequency=args.min_frequency,
        lowercase=args.lowercase,
    )
    print(f"Wrote a word-piece vocabulary of {_count_lines(vocab_file)} entries to {vocab_file}")


def train_wordpiece_vocab(
    files: list[str],
    output_dir: str,
    vocab_size: int = 30000,
    min_frequency: int = 2,
    lowercase: bool = False,
) -> str:
    """
    Trains a WordPiece vocabulary on `files` and writes `output_dir/vocab.txt`, whose path it returns.

    # Parameters

    files : `List[str]`
        Text files (plain, or gzip, bzip2 or xz), or globs (`**` allowed) that must each match at least one
        file.
    output_dir : `str`
        Where to write `vocab.txt`; created if missing. An existing `vocab.txt` is replaced, once the new one
        is complete and checked (it is written aside and renamed).
    vocab_size : `int`, optional (default = `30000`)
        Maximum number of entries, special tokens included. A small corpus can give fewer.
    min_frequency : `int`, optional (default = `2`)
        Minimum count of a pair of pieces for it to be merged into a new piece.
    lowercase : `bool`, optional (default = `False`)
        Train an uncased vocabulary: text is lower-cased and accents are stripped, as in `bert-base-uncased`.
    """
    vocab.check_training(output_dir, min_frequency)
    if vocab_size <= len(REQUIRED_SPECIAL_TOKENS):
        raise Refusal(
            f"vocab_size is {vocab_size}, but it must exceed the {len(REQUIRED_SPECIAL_TOKENS)} special "
            f"tokens; give a few thousand (30000 is BERT's size)."
        )
    paths = expand_corpus_paths(files)
    tokenizer = BertWordPieceTokenizer(clean_text=True, lowercase=lowercase, strip_accents=lowercase)
    # Lines are read here, not by the Rust trainer, so that compressed files read and a line that is not
    # UTF-8 is an error naming its file and line.
    text_lines = [0]

    def lines() -> Iterator[str]:
        for path in paths:
            for _, line in read_lines(path):
                text_lines[0] += bool(line.strip())
                yield line

    tokenizer.train_from_iterator(
        lines(),
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(REQUIRED_SPECIAL_TOKENS),
        limit_alphabet=1000,
        show_progress=False,
    )
    if not text_lines[0]:  # before anything is written: an existing vocabulary stays
        named = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        raise Refusal(
            f"The corpus ({named}) has no text: every line is blank, and a vocabulary trained on it would "
            f"hold the special tokens only. Give the files of your training text."
        )
    os.makedirs(output_dir, exist_ok=True)
    vocab_file = os.path.join(output_dir, VOCAB_FILE_NAME)
    work = tempfile.mkdtemp(prefix=".maelmo_vocab_", dir=output_dir)
    try:
        try:
            written = tokenizer.save_model(work)[0]
        except Exception as error:  # tokenizers' errors are plain Exceptions, an OS error named in the text
            raise (disk_refusal(error) or error) from None
        _check_special_token_ids(written)
        os.replace(written, vocab_file)
        owned_outputs.write_manifest(vocab_file, vocab.NAME, directory=False)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    logger.info("Trained a word-piece vocabulary on %d file(s): %s", len(paths), vocab_file)
    return vocab_file


def expand_corpus_paths(patterns: list[str]) -> list[str]:
    """
    The files named by `patterns` (paths or globs), in order and without duplicates.

    Raises a `Refusal`, naming the pattern, when one names no file: a silently empty corpus
    would give a vocabulary of special tokens only.
    """
    if isinstance(patterns, str):
        patterns = [patterns]
    if not patterns:
        raise Refusal("No corpus file given: give one or more text files or globs.")
    paths: list[str] = []
    for pattern in patterns:
        for path in _expand_one(pattern):
            if path not in paths:
                paths.append(path)
    return paths


def _expand_one(pattern: str) -> list[str]:
    pattern = os.path.expanduser(pattern)
    if os.path.isfile(pattern):
        return [pattern]
    if os.path.isdir(pattern):
        example = os.path.join(pattern, "*.txt")
        raise Refusal(f"Corpus {pattern!r} is a directory: give its files, e.g. '{example}'.")
    matches = sorted(path for path in glob.glob(pattern, recursive=True) if os.path.isfile(path))
    if not matches:
        raise Refusal(
            f"Corpus {pattern!r} matches no file: check the path (relative paths start from "
            f"{os.getcwd()!r}), or give a glob that matches your text files, e.g. 'data/*.txt'."
        )
    return matches


def _check_special_token_ids(vocab_file: str) -> None:
    # The tokenizer, the AllenNLP vocabulary and the masking code all rely on these fixed ids.
    with open(vocab_file, encoding="utf-8") as lines:
        head = [line.rstrip("\n") for _, line in zip(REQUIRED_SPECIAL_TOKENS, lines)]
    if tuple(head) != REQUIRED_SPECIAL_TOKENS:
        raise RuntimeError(f"{vocab_file} starts with {head}, not {list(REQUIRED_SPECIAL_TOKENS)}.")


def _count_lines(path: str) -> int:
    with open(path, encoding="utf-8") as lines:
        return sum(1 for _ in lines)
