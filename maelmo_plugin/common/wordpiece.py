"""
Word-piece tokenization on HF's fast (Rust) WordPiece, loadable offline from a local `vocab.txt`.

The same `vocab` string names the vocabulary everywhere (tokenizer, AllenNLP `Vocabulary`, masking):
a path to a `vocab.txt`, a directory written by `save_pretrained` / `allennlp maelmo-vocab`, or a
hub name such as `bert-base-cased` (which needs the network, or a populated HF cache).

Word-piece ids are the line numbers of `vocab.txt`, and the AllenNLP namespace `wordpieces` holds the
same entries in the same order (non-padded), so an id means the same thing to the tokenizer, the
vocabulary, the embedding matrix and the tied softmax. The tokenizer sets `Token.text_id`, and the
indexer (`wordpiece_id_indexer`) copies those ids into tensors without a vocabulary look-up. [PAD] must
be id 0, because AllenNLP pads with 0 and derives the padding mask from it.
"""

import functools
import logging
import os
from typing import Optional, Union

from allennlp.common.checks import ConfigurationError
from allennlp.data.token_indexers import SingleIdTokenIndexer
from allennlp.data.tokenizers import Token, Tokenizer
from allennlp.data.vocabulary import Vocabulary
from tokenizers import Encoding
from transformers import AutoTokenizer, BertTokenizerFast, PreTrainedTokenizerFast

from maelmo_files.common.special_tokens import CLS, PAD, REQUIRED_SPECIAL_TOKENS, SEP
from maelmo_plugin.common.archive_assets import ASSETS_DIR, find_asset, holds_trained_weights, save_asset

logger = logging.getLogger(__name__)

WORDPIECE_NAMESPACE = "wordpieces"


@functools.lru_cache(maxsize=8)
def load_wordpiece_tokenizer(vocab: str, lowercase: Optional[bool] = None) -> PreTrainedTokenizerFast:
    """
    Loads (once per process) the fast WordPiece tokenizer named by `vocab`.

    `lowercase=None` infers casing from a `vocab.txt`: a vocabulary without any upper-case entry is
    uncased. Hub names and tokenizer directories carry their own setting.
    """
    if os.path.isfile(vocab):
        if lowercase is None:
            lowercase = not _has_uppercase_entries(vocab)
        tokenizer = BertTokenizerFast(vocab_file=vocab, do_lower_case=lowercase)
    elif not os.path.exists(vocab) and (vocab.endswith(".txt") or vocab.startswith(("/", "./", "../", "~"))):
        # A path, not a hub name: most often a relative one read from another working directory.
        raise ConfigurationError(
            f"The word-piece vocabulary: no such file: {vocab!r} (relative paths are read from the working "
            f"directory, {os.getcwd()}). Give the path of a vocab.txt, a tokenizer directory or a hub name."
        )
    else:
        try:
            tokenizer = AutoTokenizer.from_pretrained(vocab, use_fast=True)
        except (OSError, ValueError) as error:
            raise ConfigurationError(
                f"Cannot load the word-piece vocabulary {vocab!r}: it is not a vocab.txt file, and loading it "
                f"as a tokenizer directory or hub name failed ({error}). Give the path of a vocab.txt (for "
                f"example one written by `maelmo maelmo-vocab`), or a hub name such as 'bert-base-cased' "
                f"when online."
            ) from error
        if not isinstance(tokenizer, PreTrainedTokenizerFast):
            raise ConfigurationError(f"{vocab!r} has no fast tokenizer; Masked ELMo needs a WordPiece one.")
    # HF silently *appends* a missing [MASK]/[CLS]/... as an "added token": check the vocabulary proper.
    base_vocab = tokenizer.backend_tokenizer.get_vocab(with_added_tokens=False)
    missing = [token for token in REQUIRED_SPECIAL_TOKENS if token not in base_vocab]
    if missing:
        raise ConfigurationError(
            f"The word-piece vocabulary {vocab!r} lacks the special tokens {missing}; Masked ELMo needs "
            f"{list(REQUIRED_SPECIAL_TOKENS)}. Train a vocabulary with `maelmo maelmo-vocab`, which adds them."
        )
    if tokenizer.convert_tokens_to_ids(PAD) != 0:
        raise ConfigurationError(
            f"In the word-piece vocabulary {vocab!r}, {PAD} has id {tokenizer.convert_tokens_to_ids(PAD)}; it "
            f"must be the first entry (id 0), as in BERT's vocabularies and those of `maelmo maelmo-vocab`."
        )
    return tokenizer


def _tokenizer_of_run(
    vocab: str, lowercase: Optional[bool], serialization_dir: Optional[str]
) -> PreTrainedTokenizerFast:
    """The run's copy of the tokenizer when there is one (an archive at load), else `vocab`'s, copied."""
    copy = find_asset(serialization_dir, "tokenizer", vocab)
    if copy is not None:
        return load_wordpiece_tokenizer(copy)
    try:
        tokenizer = load_wordpiece_tokenizer(vocab, lowercase)
    except ConfigurationError as error:
        if serialization_dir is None or not holds_trained_weights(serialization_dir):
            raise
        raise ConfigurationError(
            f"{error} The model in {serialization_dir} holds no copy of its tokenizer in {ASSETS_DIR}/: "
            f"its config lacks include_in_archive: [{ASSETS_DIR!r}], as configs written before self-contained archives "
            f"do. Load it "
            f'with -o \'{{"dataset_reader.tokenizer.vocab": "path/to/vocab.txt"}}\' (its original '
            f"vocabulary), or train it again with a config from training_config/."
        ) from error
    save_asset(serialization_dir, "tokenizer", vocab, tokenizer.save_pretrained)
    return tokenizer


def wordpiece_id_indexer() -> SingleIdTokenIndexer:
    """Indexes `Token.text_id` directly (`namespace=None`); padding is 0, i.e. [PAD]."""
    return SingleIdTokenIndexer(namespace=None, feature_name="text_id")


def _has_uppercase_entries(vocab_file: str) -> bool:
    with open(vocab_file, encoding="utf-8") as lines:
        return any(not line.startswith("[") and line != line.lower() for line in lines)


def wordpiece_entries(vocab: str) -> list[str]:
    """The vocabulary's entries in id order (entry i has id i)."""
    token_to_id = load_wordpiece_tokenizer(vocab).get_vocab()
    entries = sorted(token_to_id, key=token_to_id.__getitem__)
    if [token_to_id[entry] for entry in entries] != list(range(len(entries))):
        raise ConfigurationError(f"The word-piece ids of {vocab!r} are not contiguous from 0.")
    return entries


@Tokenizer.register("maelmo_wordpiece")
class WordpieceTokenizer(Tokenizer):
    """
    Splits text into word-pieces with HF's fast WordPiece tokenizer and sets each `Token.text_id`, so a
    `single_id` indexer on the `wordpieces` namespace uses the vocabulary's own ids.

    Registered as a `Tokenizer` with name "maelmo_wordpiece".

    # Parameters

    vocab : `str`
        A `vocab.txt`, a tokenizer directory, or a hub name (e.g. `bert-base-cased`, the paper's).
    lowercase : `bool`, optional (default = `None`)
        Lower-case (and strip accents) before splitting. `None` infers it from a `vocab.txt` (uncased
        when no entry has an upper-case letter).
    add_special_tokens : `bool`, optional (default = `False`)
        Wrap each text as `[CLS] ... [SEP]`, the layout of a one-sentence paragraph in pre-training: set it
        for downstream sentences (GLUE). The pre-training reader adds its own separators.
    serialization_dir : `str`, optional (default = `None`)
        Given by AllenNLP (not set in configs): the run's directory in training, the extracted archive at
        load. The tokenizer is copied into its `maelmo_assets/` in training, and read back from there at
        load, so that an archive keeps working after `vocab` has moved (see `maelmo_plugin.common.archive_assets`).
    """

    def __init__(
        self,
        vocab: str,
        lowercase: Optional[bool] = None,
        add_special_tokens: bool = False,
        serialization_dir: Optional[str] = None,
    ) -> None:
        self._vocab = vocab
        self._lowercase = lowercase
        self._add_special_tokens = add_special_tokens
        self._tokenizer = _tokenizer_of_run(vocab, lowercase, serialization_dir)
        self._cls_id = self._tokenizer.convert_tokens_to_ids(CLS)
        self._sep_id = self._tokenizer.convert_tokens_to_ids(SEP)

    def tokenize(self, text: str) -> list[Token]:
        return self.batch_tokenize([text])[0]

    def batch_tokenize(self, texts: list[str]) -> list[list[Token]]:
        # One call for many texts: the Rust tokenizer batches them without Python per-token work.
        encodings = self.batch_ids(texts)
        if self._add_special_tokens:
            encodings = [[self._cls_id, *ids, self._sep_id] for ids in encodings]
        return [
            [Token(text=piece, text_id=piece_id) for piece, piece_id in zip(self.ids_to_pieces(ids), ids)]
            for ids in encodings
        ]

    def batch_ids(self, texts: list[str]) -> list[list[int]]:
        """
        Word-piece ids only: the corpus reader's fast path. It calls the Rust tokenizer's own `encode_batch`,
        which is what `self._tokenizer(texts, add_special_tokens=False)` calls, without transformers' dictionary
        per text (a tenth of a store's preparation), and neither truncates nor pads, as that call does not.
        """
        backend = self._tokenizer.backend_tokenizer
        if backend.truncation is not None or backend.padding is not None:  # a tokenizer.json may set them
            backend.no_truncation()
            backend.no_padding()
        return [encoding.ids for encoding in backend.encode_batch(texts, add_special_tokens=False)]

    def batch_encodings(
        self, texts: Union[list[str], list[list[str]]], is_split_into_words: bool = False
    ) -> list[Encoding]:
        """
        The fast tokenizer's `tokenizers.Encoding`s (`ids`, `tokens`, `word_ids`, `offsets`), without special
        tokens: what the predictors need to align word-pieces with words. With `is_split_into_words`, each
        text is a list of words and `word_ids` index that list.
        """
        encoded = self._tokenizer(texts, add_special_tokens=False, is_split_into_words=is_split_into_words)
        return encoded.encodings

    @property
    def vocab(self) -> str:
        """The `vocab` it was built from (a path or a hub name), as the config gave it."""
        return self._vocab

    @property
    def hf_tokenizer(self) -> PreTrainedTokenizerFast:
        """The underlying HF fast tokenizer (what an export ships as its tokenizer files)."""
        return self._tokenizer

    def ids_to_pieces(self, ids: list[int]) -> list[str]:
        return self._tokenizer.convert_ids_to_tokens(ids)

    def token_id(self, token: str) -> int:
        return self._tokenizer.convert_tokens_to_ids(token)

    def _to_params(self) -> dict[str, object]:
        return {
            "type": "maelmo_wordpiece",
            "vocab": self._vocab,
            "lowercase": self._lowercase,
            "add_special_tokens": self._add_special_tokens,
        }


@Vocabulary.register("maelmo_wordpiece", constructor="from_wordpiece_vocab")
class WordpieceVocabulary(Vocabulary):
    """
    Builds the AllenNLP `Vocabulary` straight from a word-piece vocabulary, with no pass over the corpus:
    namespace `wordpieces` holds the entries in id order and is non-padded ([PAD] is entry 0 of BERT-style
    vocabularies), so vocabulary index == word-piece id.

    Registered as a `Vocabulary` with name "maelmo_wordpiece".

    # Parameters

    vocab : `str`
        A `vocab.txt`, a tokenizer directory, or a hub name (see `WordpieceTokenizer`).
    namespace : `str`, optional (default = `"wordpieces"`)
    """

    @classmethod
    def from_wordpiece_vocab(cls, vocab: str, namespace: str = WORDPIECE_NAMESPACE) -> Vocabulary:
        entries = wordpiece_entries(vocab)
        # AllenNLP's own padding/oov tokens are kept on purpose: save_to_files drops entry 0 of a namespace
        # when it equals the padding token, so padding_token="[PAD]" would lose [PAD] from every archive.
        vocabulary = cls(non_padded_namespaces=[namespace])
        for entry in entries:
            vocabulary.add_token_to_namespace(entry, namespace)
        logger.info("Word-piece vocabulary %s: %d entries in namespace %r", vocab, len(entries), namespace)
        return vocabulary
