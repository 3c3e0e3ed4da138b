"""
Generates the embedded sample corpus in `training_config/lm/sample/`: `train.txt`, `valid.txt` and a cased
WordPiece `vocab.txt` trained on `train.txt`.

    .venv/bin/python scripts/make_sample_corpus.py [--output-dir training_config/lm/sample]

The text is real English prose: the Python Language Reference topics that CPython ships for `help()`, in
`Lib/pydoc_data/topics.py` (PSF License Agreement; see `LICENSE` and `README.md` next to the data). So the
corpus needs no download, and the running interpreter's own copy is the source (its version is printed).

Each topic (in sorted order of its key) becomes one document: its first heading as the title, then its prose
paragraphs, each joined onto one line. Dropped: headings, tables, rulers, code and grammar blocks, `>>>`
sessions, and paragraphs of fewer than 4 words. A paragraph met in an earlier topic is dropped (topics repeat
each other, e.g. "compound" holds "if" and "while"), so no paragraph is in both splits. Every 10th document
(the 6th, 16th, ...) goes to `valid.txt`, the rest to `train.txt`.

The two text files are byte-identical on every run of the same Python version. `vocab.txt` is not: HF
`tokenizers` (0.19) breaks ties between equally frequent merges in hash-map order, so a few entries (0 to 3
in our runs) and the ids of a few hundred (e.g. the order of the `##` letters) change from run to run. The
committed `vocab.txt` is the reference.

Format (the corpus reader's contract): UTF-8 plain text, one paragraph per line, a blank line between
documents; the first line of a document is its title.
"""

import argparse
import os
import platform
import re
from pydoc_data.topics import topics

SAMPLE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "training_config", "lm", "sample")
VALID_EVERY, VALID_AT, MIN_WORDS, VOCAB_SIZE = 10, 5, 4, 2000
RULER = re.compile(r"^\s*([*=\-^~])\1+\s*$|^\s*(\+[-=]{3}|\|)")  # heading underlines, table borders and rows
CODE = re.compile(r"^\s*(>>>|\.\.\.|#|@)")  # interactive sessions, comments, decorators
LIST_MARKER = re.compile(r"^(\*|-|\d+\.|\(\d+\)|\[\d+\]) +")
WORD = re.compile(r"[\"“‘(]*[A-Za-z][a-z’'-]*[\"”’),.;:?!]*")


def paragraph(lines: list[str]) -> str:
    """A block of lines as one line of prose, or "" if it is code, grammar, a table or a heading."""
    first_indent = len(lines[0]) - len(lines[0].lstrip())
    rest_indents = {len(line) - len(line.lstrip()) for line in lines[1:]}
    if len(rest_indents) > 1 or (rest_indents and min(rest_indents) < first_indent):
        return ""  # ragged indentation: code (prose is flush, or hangs under a list marker)
    if any(RULER.match(line) or CODE.match(line) or "::=" in line for line in lines):
        return ""
    # Join, then drop list markers, footnote marks ("[1]") and the stars of *emphasis* and **strong**.
    text = LIST_MARKER.sub("", " ".join(" ".join(lines).split()))
    text = re.sub(r" \[\d+\]", "", text)
    text = re.sub(r"(?<![\w*\"])\*{1,2}([A-Za-z_]([\w’' .:-]*?[\w):])?)\*{1,2}(?![\w*])", r"\1", text)
    words = text.split()
    if len(words) < MIN_WORDS or sum(map(bool, map(WORD.fullmatch, words))) < 0.6 * len(words):
        return ""  # too short, or mostly symbols: a signature, an expression, a code line
    return text if text[-1] in '.,;:?!)”"' else ""  # prose ends a sentence or clause


def document(topic: str, seen: set[str]) -> list[str]:
    """The title and new prose paragraphs of one topic (an empty list if it has fewer than 2 paragraphs)."""
    title, *body = topics[topic].split("\n")
    paragraphs = []
    for block in re.split(r"\n\s*\n", "\n".join(body)):
        lines = [line.rstrip() for line in block.split("\n") if line.strip()]
        text = paragraph(lines) if lines else ""
        if text and text not in seen:
            seen.add(text)
            paragraphs.append(text)
    return [title.strip()] + paragraphs if len(paragraphs) >= 2 else []


def unknown_rate(vocab_file: str, text_file: str) -> float:
    """The share of word pieces of `text_file` that are `[UNK]` under `vocab_file`."""
    from tokenizers import BertWordPieceTokenizer

    tokenizer = BertWordPieceTokenizer(vocab_file, lowercase=False, strip_accents=False)
    with open(text_file, encoding="utf-8") as lines:
        ids = [
            i for line in lines if line.strip() for i in tokenizer.encode(line, add_special_tokens=False).ids
        ]
    return ids.count(tokenizer.token_to_id("[UNK]")) / max(len(ids), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default=os.path.normpath(SAMPLE_DIR))
    args = parser.parse_args()
    # The vocabulary is trained with the project's own function: the plugin as scripts/setup.sh installs it.
    from maelmo_files.commands.wordpiece_vocab import train_wordpiece_vocab

    seen: set[str] = set()
    documents = [doc for doc in (document(topic, seen) for topic in sorted(topics)) if doc]
    splits = {
        "train.txt": [d for i, d in enumerate(documents) if i % VALID_EVERY != VALID_AT],
        "valid.txt": documents[VALID_AT::VALID_EVERY],
    }
    os.makedirs(args.output_dir, exist_ok=True)
    summary = []
    for name, docs in splits.items():
        text = "\n\n".join("\n".join(doc) for doc in docs) + "\n"
        with open(os.path.join(args.output_dir, name), "w", encoding="utf-8", newline="\n") as output:
            output.write(text)
        summary.append(
            f"{name} {len(docs)} documents, {sum(len(d) - 1 for d in docs):,} paragraphs, "
            f"{len(text.split()):,} words"
        )
    print(f"Python {platform.python_version()} reference topics -> {args.output_dir}: " + "; ".join(summary))
    train_path = os.path.join(args.output_dir, "train.txt")
    vocab_file = train_wordpiece_vocab([train_path], args.output_dir, vocab_size=VOCAB_SIZE, min_frequency=2)
    with open(vocab_file, encoding="utf-8") as lines:
        print(
            f"vocab.txt: {sum(1 for _ in lines)} entries; [UNK] rate on valid.txt: "
            f"{unknown_rate(vocab_file, os.path.join(args.output_dir, 'valid.txt')):.3%}"
        )


if __name__ == "__main__":
    main()
