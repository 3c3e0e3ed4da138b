"""The pre-training text of the campaigns: WikiText-2 whole, or its first 4,000 lines, and 1,500 validation lines;
the speed campaign's short runs read its first 1,200 lines and 100 validation lines."""

import os
import sys
from pathlib import Path

from reproduction import RUNS


def data_files(kind: str) -> dict:
    """WikiText-2 in full ("full"), its first 4,000 training lines ("subset"), its first 1,200 ("timing": a short
    run timed, with 100 validation lines, as its validations are not what it measures) or first 100 ("tiny": a
    model's architecture in an archive, in seconds); validation: 1,500 lines."""
    wikitext = Path(os.environ.get("WIKITEXT2_DIR") or sys.exit("set WIKITEXT2_DIR (WikiText-2's folder)"))
    vocab = os.environ.get("MAELMO_VOCAB") or sys.exit("set MAELMO_VOCAB (bert-base-cased's vocab.txt)")
    RUNS.mkdir(parents=True, exist_ok=True)
    files = {"train": wikitext / "train.txt"}
    for split, source, lines in (
        ("subset", "train.txt", 4000),
        ("timing", "train.txt", 1200),
        ("tiny", "train.txt", 100),
        ("valid", "valid.txt", 1500),
        ("valid_timing", "valid.txt", 100),
    ):
        path = RUNS / f"wikitext2-{split}-{lines}.txt"
        with open(wikitext / source, encoding="utf-8") as text:
            first = "".join(line for _, line in zip(range(lines), text))
        # Checked each time, not only made once: a file left by another WIKITEXT2_DIR (a test's, another copy's)
        # would otherwise be trained on in silence. Written whole, then moved into place: a worker never reads
        # half a file.
        if not path.exists() or path.read_text(encoding="utf-8") != first:
            partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
            partial.write_text(first, encoding="utf-8")
            partial.replace(path)
        files[split] = path
    train = files["train"] if kind == "full" else files[kind]
    return {
        "train": str(train.resolve()),
        "validation": str(files["valid_timing" if kind == "timing" else "valid"].resolve()),
        "vocab": str(Path(vocab).resolve()),
    }
