"""The pre-training text of the campaigns: WikiText-2 whole, or its first 4,000 lines, and 1,500 validation lines."""

import os
import sys
from pathlib import Path

from reproduction import RUNS


def data_files(kind: str) -> dict:
    """WikiText-2 in full ("full"), its first 4,000 training lines ("subset") or first 100 ("tiny": a model's
    architecture in an archive, in seconds); validation: 1,500 lines."""
    wikitext = Path(os.environ.get("WIKITEXT2_DIR") or sys.exit("set WIKITEXT2_DIR (WikiText-2's folder)"))
    vocab = os.environ.get("MAELMO_VOCAB") or sys.exit("set MAELMO_VOCAB (bert-base-cased's vocab.txt)")
    RUNS.mkdir(parents=True, exist_ok=True)
    files = {"train": wikitext / "train.txt"}
    for split, source, lines in (
        ("subset", "train.txt", 4000),
        ("tiny", "train.txt", 100),
        ("valid", "valid.txt", 1500),
    ):
        path = RUNS / f"wikitext2-{split}-{lines}.txt"
        if not path.exists():
            with open(wikitext / source, encoding="utf-8") as text:
                path.write_text("".join(line for _, line in zip(range(lines), text)), encoding="utf-8")
        files[split] = path
    train = files["train"] if kind == "full" else files[kind]
    return {
        "train": str(train.resolve()),
        "validation": str(files["valid"].resolve()),
        "vocab": str(Path(vocab).resolve()),
    }
