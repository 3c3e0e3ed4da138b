import json
import os
from unittest import mock

import pytest

from maelmo_declarations.owned_outputs import write_manifest
from maelmo_declarations.refusals import Refusal
from maelmo_files.commands.wordpiece_vocab import expand_corpus_paths, train_wordpiece_vocab
from maelmo_files.common.special_tokens import REQUIRED_SPECIAL_TOKENS
from maelmo_plugin.common.wordpiece import load_wordpiece_tokenizer
from tests import run_allennlp_in_process
from tests.common.text_files_test import VARIANTS, write_compressed

SENTENCES = [
    "The grey heron wades in the shallow river and catches small fish.",
    "Two foxes were seen near the old mill in Brenmoor, hunting mice at night.",
    "Alda Varrow was a baker who sold bread at the market every Tuesday.",
    "The river floods in spring, and the farmers move their sheep to the hills.",
]


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    # Repeated, so that pairs pass min_frequency and real merges are learnt.
    path.write_text("\n".join(SENTENCES * 5) + "\n", encoding="utf-8")
    return path


class TestTrainWordpieceVocab:
    def test_special_tokens_come_first_in_order(self, corpus, tmp_path):
        vocab_file = train_wordpiece_vocab([str(corpus)], str(tmp_path / "out"), vocab_size=200)
        entries = (tmp_path / "out" / "vocab.txt").read_text(encoding="utf-8").splitlines()
        assert vocab_file == str(tmp_path / "out" / "vocab.txt")
        assert entries[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        assert 50 < len(entries) <= 200

    def test_vocab_loads_and_round_trips_a_sentence(self, corpus, tmp_path):
        vocab_file = train_wordpiece_vocab([str(corpus)], str(tmp_path), vocab_size=200)
        tokenizer = load_wordpiece_tokenizer(vocab_file)
        special_ids = [tokenizer.convert_tokens_to_ids(token) for token in REQUIRED_SPECIAL_TOKENS]
        assert special_ids == [0, 1, 2, 3, 4]
        text = "The grey heron catches fish near Brenmoor."
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert tokenizer.unk_token_id not in ids
        # A cased vocabulary (inferred from its entries) gives the text back exactly.
        assert tokenizer.decode(ids) == text

    def test_lowercase_gives_an_uncased_vocab(self, corpus, tmp_path):
        vocab_file = train_wordpiece_vocab([str(corpus)], str(tmp_path), vocab_size=200, lowercase=True)
        entries = open(vocab_file, encoding="utf-8").read().splitlines()[5:]
        assert all(entry == entry.lower() for entry in entries)

    def test_globs_expand_in_order_without_duplicates(self, tmp_path):
        for name in ["b.txt", "a.txt"]:
            (tmp_path / name).write_text("text\n", encoding="utf-8")
        paths = expand_corpus_paths([str(tmp_path / "*.txt"), str(tmp_path / "a.txt")])
        assert paths == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]

    def test_missing_file_is_named_in_the_error(self, corpus, tmp_path):
        missing = str(tmp_path / "nope" / "*.txt")
        with pytest.raises(Refusal, match="nope"):
            train_wordpiece_vocab([str(corpus), missing], str(tmp_path / "out"))
        assert not (tmp_path / "out").exists()

    def test_tiny_vocab_size_is_a_configuration_error(self, corpus, tmp_path):
        with pytest.raises(Refusal, match="vocab_size"):
            train_wordpiece_vocab([str(corpus)], str(tmp_path), vocab_size=5)

    @pytest.mark.parametrize("kind, name", VARIANTS[1:])
    def test_a_compressed_corpus_trains_the_vocab_of_its_text(self, corpus, tmp_path, kind, name):
        compressed = write_compressed(tmp_path / name, corpus.read_text(encoding="utf-8"), kind)
        vocab_file = train_wordpiece_vocab([str(compressed)], str(tmp_path / "out"), vocab_size=200)
        tokenizer = load_wordpiece_tokenizer(vocab_file)
        for sentence in SENTENCES:  # every word of the text is in the vocabulary, whole or in pieces
            ids = tokenizer(sentence, add_special_tokens=False)["input_ids"]
            assert tokenizer.unk_token_id not in ids and tokenizer.decode(ids) == sentence

    def test_a_line_that_is_not_utf8_is_named(self, tmp_path):
        text = "The cat.\nThe caf\xe9.\n"
        bad = write_compressed(tmp_path / "corpus.txt", text, "gzip", encoding="latin-1")
        with pytest.raises(Refusal, match=r"corpus\.txt, line 2: not valid UTF-8 .*iconv"):
            train_wordpiece_vocab([str(bad)], str(tmp_path / "out"), vocab_size=200)


class TestMaelmoVocabCommand:
    def run_cli(self, *args: str) -> None:
        run_allennlp_in_process("maelmo-vocab", *args)

    def test_writes_the_vocab(self, corpus, tmp_path, capsys):
        out_dir = tmp_path / "vocab"
        self.run_cli(str(tmp_path / "*.txt"), "--output-dir", str(out_dir), "--vocab-size", "150")
        vocab_file = out_dir / "vocab.txt"
        assert vocab_file.is_file()
        num_entries = len(vocab_file.read_text(encoding="utf-8").splitlines())
        assert f"{num_entries} entries to {vocab_file}" in capsys.readouterr().out

    @pytest.mark.parametrize(
        "arguments, message",
        [
            (["--min-frequency", "-5"], "min_frequency (--min-frequency) is -5: it counts how often a pair"),
            (["--read-only"], "is not writable by this user"),
        ],
    )
    def test_a_bad_option_or_folder_is_refused_before_the_training(
        self, corpus, tmp_path, capsys, arguments, message
    ):
        out_dir = tmp_path / "vocab"
        real_access = os.access

        def access(path, mode):  # the folder read-only (root, as in CI, may write anywhere)
            return (
                False
                if "--read-only" in arguments and str(path) == str(tmp_path)
                else real_access(path, mode)
            )

        options = [argument for argument in arguments if argument != "--read-only"]
        with (
            mock.patch("os.access", access),
            mock.patch("tokenizers.BertWordPieceTokenizer", side_effect=AssertionError("trained")),
            pytest.raises(SystemExit) as exit_info,
        ):
            self.run_cli(str(tmp_path / "*.txt"), "--output-dir", str(out_dir), *options)
        error = capsys.readouterr().err
        assert exit_info.value.code == 2 and "Traceback" not in error
        assert message in error.strip().splitlines()[-1] and not out_dir.exists()

    def test_missing_corpus_exits_with_a_message(self, tmp_path, capsys):
        missing = str(tmp_path / "missing.txt")
        with pytest.raises(SystemExit) as exit_info:
            self.run_cli(missing, "--output-dir", str(tmp_path / "out"))
        assert exit_info.value.code != 0
        error = capsys.readouterr().err
        assert missing in error and "matches no file" in error
        assert "Traceback" not in error

    @pytest.mark.parametrize("text", ["", "\n  \n\t\n"])
    def test_a_corpus_without_text_is_refused_and_a_vocab_stays(self, tmp_path, capsys, text):
        corpus = tmp_path / "blank.txt"
        corpus.write_text(text, encoding="utf-8")
        out_dir = tmp_path / "vocab"
        out_dir.mkdir()
        (out_dir / "vocab.txt").write_text("precious\n", encoding="utf-8")
        write_manifest(str(out_dir / "vocab.txt"), "maelmo-vocab", directory=False)  # a previous run's
        with pytest.raises(SystemExit) as exit_info:
            self.run_cli(str(corpus), "--output-dir", str(out_dir), "--force")
        assert exit_info.value.code == 2
        assert (
            capsys.readouterr()
            .err.strip()
            .endswith(
                f"The corpus ({corpus}) has no text: every line is blank, and a vocabulary trained on it would hold "
                f"the special tokens only. Give the files of your training text."
            )
        )
        assert (out_dir / "vocab.txt").read_text(encoding="utf-8") == "precious\n"

    def test_an_existing_vocab_is_replaced_only_with_force_and_only_when_complete(
        self, corpus, tmp_path, capsys
    ):
        out_dir = tmp_path / "vocab"
        out_dir.mkdir()
        (out_dir / "vocab.txt").write_text("precious\n", encoding="utf-8")
        arguments = (str(corpus), "--output-dir", str(out_dir), "--vocab-size", "150")
        # A vocab.txt maelmo-vocab did not write (no manifest): the user's, kept even with --force.
        for force in ((), ("--force",)):
            with pytest.raises(SystemExit):
                self.run_cli(*arguments, *force)
            assert "maelmo-vocab did not write" in capsys.readouterr().err
        write_manifest(str(out_dir / "vocab.txt"), "maelmo-vocab", directory=False)  # now a previous run's
        with mock.patch("tokenizers.BertWordPieceTokenizer", side_effect=AssertionError("trained")):
            with pytest.raises(SystemExit) as exit_info:
                self.run_cli(*arguments)
        assert exit_info.value.code == 2
        assert (
            capsys.readouterr()
            .err.strip()
            .endswith("holds a previous output of maelmo-vocab: give a new path, or --force to replace it.")
        )
        # A run that fails after writing (here the check of the written file) leaves the old one.
        with mock.patch(
            "maelmo_files.commands.wordpiece_vocab._check_special_token_ids",
            side_effect=RuntimeError("disk full"),
        ):
            with pytest.raises(RuntimeError):
                self.run_cli(*arguments, "--force")
        assert (out_dir / "vocab.txt").read_text(encoding="utf-8") == "precious\n"
        assert sorted(os.listdir(out_dir)) == [".vocab.txt.maelmo-output.json", "vocab.txt"]
        self.run_cli(*arguments, "--force")
        assert (out_dir / "vocab.txt").read_text(encoding="utf-8").startswith("[PAD]\n[UNK]\n")
        manifest = json.loads((out_dir / ".vocab.txt.maelmo-output.json").read_text())
        assert manifest["files"] == {"vocab.txt": (out_dir / "vocab.txt").stat().st_size}
