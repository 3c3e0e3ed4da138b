"""`maelmo-prepare --shard K/N` writes parts that `maelmo-merge` joins into the unsharded store, bit for bit."""

import json
import os
import random
from pathlib import Path

import numpy as np
import pytest
from allennlp.common import Params
from allennlp.data import DatasetReader

from maelmo_declarations.refusals import Refusal
from maelmo_declarations.shards import Shard
from maelmo_files.token_store.merge import merge_parts
from maelmo_plugin.lm.dataset_readers import corpus_files
from maelmo_plugin.lm.dataset_readers.token_store import TokenStore
from tests import FIXTURES_ROOT, run_allennlp_in_process
from tests.common.text_files_test import write_compressed

VOCAB = str(FIXTURES_ROOT / "lm" / "vocab.txt")
WORDS = "the cat sat on a mat . it was happy and the dog ran away".split()
STORE_FILES = ("ids.bin", "offsets.npy", "manifest.json")


def reader(pattern=None, vocab=VOCAB):
    tokenizer = {"type": "maelmo_wordpiece", "vocab": vocab}
    params = {"type": "maelmo_mlm_corpus", "tokenizer": tokenizer, "document_start_pattern": pattern}
    return DatasetReader.from_params(Params(params))


def text(seed, documents=12, pattern=False):
    """Documents of a few paragraphs, separated by blank lines (with `pattern`, each starts with `= title =`)."""
    generator = random.Random(seed)
    out = []
    for document in range(documents):
        lines = [f"= doc {document} =\n"] if pattern else []
        for _ in range(generator.randint(1, 4)):
            lines.append(" ".join(generator.choices(WORDS, k=generator.randint(3, 12))) + " .\n")
            if generator.random() < 0.3:  # a blank line inside (or between) documents
                lines.append(generator.choice(["\n", "   \n"]))
        out.append("".join(lines) + ("\n" if not pattern else ""))
    return "".join(out)


def prepare_parts(corpus, tmp_path, count, pattern=None):
    parts = []
    run = reader(pattern)
    for index in range(count):
        part = str(tmp_path / f"part{index}")
        assert TokenStore.prepare_part(run, corpus, part, Shard(index, count), quiet=True) is None
        parts.append(part)
    return parts


def assert_same_store(merged, whole):
    for name in STORE_FILES:
        assert (Path(merged) / name).read_bytes() == (Path(whole) / name).read_bytes(), name


# With the last pattern, an empty line closes a document too (and a line of spaces does not).
@pytest.mark.parametrize("pattern", [None, "^= .* =$", "^(= .* =)?$"])
@pytest.mark.parametrize("count", [1, 4, 7])
def test_parts_merge_into_the_unsharded_store(tmp_path, monkeypatch, pattern, count):
    monkeypatch.setattr(corpus_files, "BLOCK_BYTES", 64)  # parts of several blocks, cut inside documents
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text(text(1, pattern=pattern is not None), encoding="utf-8")
    write_compressed(corpus / "b.txt.gz", text(2, pattern=pattern is not None), "gzip")
    (corpus / "c.txt").write_text(text(3, 30, pattern=pattern is not None), encoding="utf-8")
    whole = TokenStore.prepare(reader(pattern), str(corpus), str(tmp_path / "whole"), quiet=True)
    parts = prepare_parts(str(corpus), tmp_path, count, pattern)
    shuffled = parts[::-1]  # any order
    manifest = merge_parts(str(tmp_path / "merged"), shuffled)
    assert manifest["num_documents"] == whole.num_documents
    assert_same_store(tmp_path / "merged", whole.directory)
    assert TokenStore(str(tmp_path / "merged")).num_tokens == whole.num_tokens


@pytest.mark.parametrize("pattern", [None, "^(= .* =)?$"])
def test_a_part_may_start_at_any_line(tmp_path, pattern):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    text = "the cat sat .\nit was happy .\n\nthe dog ran away .\n= doc 2 =\nthe cat .\n   \nit was .\n\n"
    (corpus / "a.txt").write_text(text, encoding="utf-8")
    # A byte-order mark on a line of its own: blank, as the unsharded pass reads it, so the next file's first
    # paragraph opens a document of its own.
    (corpus / "b.txt").write_text("\ufeff\nthe dog .\n\nthe cat sat .", encoding="utf-8")
    whole = TokenStore.prepare(reader(pattern), str(corpus), str(tmp_path / "whole"), quiet=True)
    # As many parts as bytes: every line starts a part, and most parts are empty.
    count = sum(path.stat().st_size for path in corpus.iterdir())
    merge_parts(str(tmp_path / "merged"), prepare_parts(str(corpus), tmp_path, count, pattern))
    assert_same_store(tmp_path / "merged", whole.directory)


def test_the_commands(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text(5), encoding="utf-8")
    run_allennlp_in_process(
        "maelmo-prepare", str(corpus), "--vocab", VOCAB, "--output-dir", str(tmp_path / "whole")
    )
    for index in range(3):
        arguments = [
            "--output-dir",
            str(tmp_path / f"p{index}"),
            "--shard",
            f"{index}/3",
            "--processes",
            str(1 + index % 2),
        ]
        run_allennlp_in_process("maelmo-prepare", str(corpus), "--vocab", VOCAB, *arguments)
        # The command that works wherever the package is installed (`allennlp` needs the plugin named).
        assert "join the 3 parts with `maelmo maelmo-merge STORE PART...`" in capsys.readouterr().out
    parts = [str(tmp_path / f"p{index}") for index in (2, 0, 1)]
    run_allennlp_in_process("maelmo-merge", str(tmp_path / "store"), *parts)
    assert "Merged 3 parts into a token store" in capsys.readouterr().out
    assert_same_store(tmp_path / "store", tmp_path / "whole")
    assert "holds a previous output of maelmo-prepare" in refused(
        capsys, "maelmo-merge", str(tmp_path / "store"), *parts
    )
    run_allennlp_in_process("maelmo-merge", str(tmp_path / "store"), *parts, "--force")
    assert_same_store(tmp_path / "store", tmp_path / "whole")
    # --force replaces the whole store prepare wrote too: a merged store is maelmo-prepare's output.
    run_allennlp_in_process("maelmo-merge", str(tmp_path / "whole"), *parts, "--force")
    users = tmp_path / "users"
    users.mkdir()
    (users / "notes.txt").write_text("mine")
    assert "did not write" in refused(capsys, "maelmo-merge", str(users), *parts, "--force")
    assert os.listdir(users) == ["notes.txt"]
    shard = refused(
        capsys, "maelmo-prepare", str(corpus), "--vocab", VOCAB, "--output-dir", "x", "--shard", "3/3"
    )
    assert "K/N needs 1 <= N" in shard


def refused(capsys, *arguments):
    """What the command says when it refuses (in one line, exit status 2)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit:
        run_allennlp_in_process(*arguments)
    assert exit.value.code == 2
    return capsys.readouterr().err


@pytest.fixture
def parts(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text(7), encoding="utf-8")
    return prepare_parts(str(corpus), tmp_path, 4)


def test_a_missing_or_duplicated_part_is_refused(tmp_path, parts):
    with pytest.raises(Refusal, match="Part 2 of 4 is missing"):
        merge_parts(str(tmp_path / "out"), [parts[0], parts[1], parts[3]])
    copy = tmp_path / "copy"
    os.symlink(parts[1], copy)
    with pytest.raises(Refusal, match=f"{parts[1]} and {copy} are the same directory"):
        merge_parts(str(tmp_path / "out"), [*parts, str(copy)])
    duplicate = tmp_path / "duplicate"
    duplicate.mkdir()
    for name in os.listdir(parts[2]):
        (duplicate / name).write_bytes((Path(parts[2]) / name).read_bytes())
    with pytest.raises(Refusal, match=f"{parts[2]} and {duplicate} are both part 2/4"):
        merge_parts(str(tmp_path / "out"), [*parts, str(duplicate)])
    with pytest.raises(Refusal, match=f"The part '{copy}' is a symbolic link"):
        merge_parts(str(tmp_path / "out"), [parts[0], parts[2], parts[3], str(copy)])
    assert not os.path.exists(tmp_path / "out")


def test_a_part_of_another_corpus_or_vocabulary_is_refused(tmp_path, parts):
    other = tmp_path / "other.txt"
    other.write_text(text(8), encoding="utf-8")
    stranger = str(tmp_path / "stranger")
    TokenStore.prepare_part(reader(), str(other), stranger, Shard(3, 4), quiet=True)
    with pytest.raises(Refusal, match=f"{stranger} is a part of another run than {parts[0]} \\(corpus"):
        merge_parts(str(tmp_path / "out"), [*parts[:3], stranger])
    lower = tmp_path / "vocab"
    lower.mkdir()
    (lower / "vocab.txt").write_text(Path(VOCAB).read_text(encoding="utf-8") + "extra\n", encoding="utf-8")
    other_vocabulary = str(tmp_path / "other_vocabulary")
    run = reader(vocab=str(lower / "vocab.txt"))
    TokenStore.prepare_part(run, str(tmp_path / "corpus.txt"), other_vocabulary, Shard(3, 4), quiet=True)
    with pytest.raises(Refusal, match=f"{other_vocabulary} is a part of another run .*vocabulary"):
        merge_parts(str(tmp_path / "out"), [*parts[:3], other_vocabulary])
    (tmp_path / "corpus.txt").write_text(text(7) + "more .\n", encoding="utf-8")
    with pytest.raises(Refusal, match="corpus.txt has changed since the part .* was prepared"):
        merge_parts(str(tmp_path / "out"), parts)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda part: _cut(part / "ids.bin"), "its ids.bin holds .* bytes, and its part.json says"),
        (lambda part: _cut(part / "lengths.bin"), "its lengths.bin holds .* bytes"),
        (lambda part: (part / "part.json").write_text("{not json"), "part.json is malformed \\(not JSON"),
        (lambda part: _edit(part, shard=-1), "part.json is malformed \\(shard, num_shards"),
        (lambda part: _edit(part, num_shards=10**9), "part.json is malformed \\(part 1/1000000000"),
        (lambda part: _edit(part, format=9), "is a part of format 9"),
        (lambda part: _edit(part, num_ids=10**15), "its ids.bin holds .* bytes"),
        (lambda part: _negative(part), "negative length"),
        (lambda part: (part / "ids.bin").unlink(), "its ids.bin is missing"),
        (lambda part: _flip(part / "ids.bin"), "its ids.bin was changed since maelmo-prepare wrote it"),
        (lambda part: _move_one_id(part), "its lengths.bin was changed since maelmo-prepare wrote it"),
    ],
)
def test_a_hostile_part_is_refused_naming_it(tmp_path, parts, damage, message):
    damage(Path(parts[1]))
    with pytest.raises(Refusal, match=f"{parts[1]}.*{message}") as refusal:
        merge_parts(str(tmp_path / "out"), parts)
    assert "\n" not in str(refusal.value)
    assert not os.path.exists(tmp_path / "out")
    assert not [
        name for name in os.listdir(tmp_path) if name.startswith(".maelmo_store_")
    ]  # nothing left aside


def _cut(path):
    path.write_bytes(path.read_bytes()[:-2])


def _edit(part, **fields):
    record = json.loads((part / "part.json").read_text())
    (part / "part.json").write_text(json.dumps({**record, **fields}))


def _negative(part):
    lengths = np.fromfile(part / "lengths.bin", dtype=np.int64)
    lengths[-1] += lengths[0] + 1  # the sum still agrees with the ids
    lengths[0] = -1
    lengths.tofile(part / "lengths.bin")


def _flip(path):
    data = bytearray(path.read_bytes())
    data[0] ^= 1
    path.write_bytes(bytes(data))


def _move_one_id(part):
    """One id counted in another document: the sizes and the sum still agree."""
    lengths = np.fromfile(part / "lengths.bin", dtype=np.int64)
    largest = int(np.argmax(lengths))
    lengths[largest] -= 1
    lengths[(largest + 1) % len(lengths)] += 1
    lengths.tofile(part / "lengths.bin")
