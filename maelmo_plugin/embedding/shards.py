"""
Shards: `maelmo-embed --shard K/N` embeds the K-th of N parts of its input, so that N machines, GPUs or
jobs of any scheduler (a Slurm array, GNU parallel, a loop over GPUs) embed one file together; then
`maelmo-merge` joins the parts (`merge.py`).

The parts are runs of whole windows (`pipeline.py` reads the input `SORTED_BATCHES` batches at a time and
sorts each window by length): shard K embeds windows K * W // N to (K + 1) * W // N - 1 of the input's W.
A shard's batches are therefore the unsharded run's batches, and its vectors are the unsharded run's bit for
bit (on the same kind of device): the merged file equals the unsharded one. The parts differ by one window
at most, and depend on the input, the batch size and N only, so every machine computes the same split
without talking to the others.

A shard's file is in the unsharded layout (a dataset per line, named by the line's index in the whole input,
and `sentence_to_index` for its lines), with one more attribute, `maelmo_shard`: the JSON record of which
part it is and of the run's fingerprint, which `maelmo-merge` checks.
"""

import json
from dataclasses import dataclass
from typing import Any

SHARD_ATTRIBUTE = "maelmo_shard"
FORMAT = 1  # of the record


@dataclass(frozen=True)
class Shard:
    """The `index`-th (from 0) of `count` parts of an input."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        """`"K/N"`, as `--shard` takes it; a `ValueError` saying what is wrong otherwise."""
        parts = text.split("/")
        try:
            index, count = (int(part) for part in parts)
        except ValueError:
            raise ValueError(
                f"--shard takes K/N, the K-th of N parts with K from 0 (e.g. --shard 0/4), got {text!r}."
            ) from None
        if count < 1 or not 0 <= index < count:
            raise ValueError(f"--shard {text}: K/N needs N >= 1 and 0 <= K < N (K counts from 0).")
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def windows(self, num_windows: int) -> range:
        """The window numbers of this part, out of the input's `num_windows`."""
        return range(self.index * num_windows // self.count, (self.index + 1) * num_windows // self.count)

    def lines(self, num_lines: int, window_size: int) -> range:
        """The 0-based line indices of this part, out of the input's `num_lines`."""
        windows = self.windows(-(-num_lines // window_size))
        return range(min(windows.start * window_size, num_lines), min(windows.stop * window_size, num_lines))

    def record(self, num_lines: int, window_size: int, fingerprint: dict[str, Any]) -> str:
        """The `maelmo_shard` attribute of this part's file (`fingerprint`: the job's, see `job.py`)."""
        lines = self.lines(num_lines, window_size)
        options = {key: value for key, value in fingerprint["options"].items() if key != "shard"}
        return json.dumps(
            {
                "format": FORMAT,
                "shard": self.index,
                "num_shards": self.count,
                "lines": [lines.start, lines.stop],
                "num_lines": num_lines,
                "run": {**fingerprint, "options": options},
            }
        )
