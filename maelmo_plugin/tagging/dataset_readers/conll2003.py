"""
AllenNLP's CoNLL-2003 reader for files as people store them: compressed or not, with clear errors.
"""

import itertools
import logging
from collections.abc import Iterator

from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path
from allennlp.data.dataset_readers.conll2003 import Conll2003DatasetReader, _is_divider
from allennlp.data.dataset_readers.dataset_reader import DatasetReader, PathOrStr
from allennlp.data.instance import Instance
from allennlp.data.tokenizers import Token

from maelmo_files.common.text_files import read_lines

logger = logging.getLogger(__name__)

COLUMNS = ("word", "POS", "chunk", "NER")


@DatasetReader.register("maelmo_conll2003")
class Conll2003Reader(Conll2003DatasetReader):
    """
    AllenNLP's `conll2003` reader (same options, same instances) that also reads gzip, bzip2 and xz files,
    found by their first bytes (`maelmo_files.common.text_files`), decodes them as UTF-8 whatever the
    locale, and stops with an error naming the file and the line on a line that is not UTF-8 or that has not
    the four columns `word POS chunk NER` (AllenNLP's reader fails there with a bare `UnicodeDecodeError` or
    `ValueError: not enough values to unpack`).

    Registered as a `DatasetReader` with name "maelmo_conll2003". The parameters are `conll2003`'s.
    """

    def _read(self, file_path: PathOrStr) -> Iterator[Instance]:
        path = cached_path(file_path)
        logger.info("Reading instances from lines in file at: %s", path)
        with read_lines(path, ConfigurationError) as lines:
            # Sentences are the runs of lines between dividers (blank lines and -DOCSTART- lines).
            sentences = (
                list(numbered)
                for is_divider, numbered in itertools.groupby(lines, lambda line: _is_divider(line[1]))
                if not is_divider
            )
            for sentence in self.shard_iterable(sentences):
                rows = [_row(path, line_number, line) for line_number, line in sentence]
                words, pos_tags, chunk_tags, ner_tags = ([*column] for column in zip(*rows))
                yield self.text_to_instance([Token(word) for word in words], pos_tags, chunk_tags, ner_tags)


def _row(path: str, line_number: int, line: str) -> list[str]:
    row = line.split()
    if len(row) != len(COLUMNS):
        raise ConfigurationError(
            f"{path}, line {line_number}: {len(row)} space-separated column(s), expected {len(COLUMNS)} "
            f"({' '.join(COLUMNS)}), as in CoNLL-2003's eng.train: {line.strip()!r}. Fix the line; a "
            f"sentence ends at a blank line."
        )
    return row
