"""
`--shard K/N`: the K-th (from 0) of N parts of an input, which lines it covers, and the record its file keeps
(`maelmo_files/embedding/shards.py` writes and checks the files). Standard library only, so that the `maelmo`
command parses `--shard` before it imports AllenNLP.
"""

import json
import re
from dataclasses import dataclass
from typing import Any

FORMAT = 2  # of the record; 2 added the content's sha256
# More parts than any cluster runs jobs, and few enough that a merge lists them: a bound on what a record or
# `--shard` may claim.
MAX_SHARDS = 100_000


@dataclass(frozen=True)
class Shard:
    """The `index`-th (from 0) of `count` parts of an input."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        """`"K/N"`, as `--shard` takes it; a `ValueError` saying what is wrong otherwise."""
        # ASCII digits only: int() would also take "٣", " 3" and "1_0".
        match = re.fullmatch(r"([0-9]{1,6})/([0-9]{1,6})", text)
        if match is None:
            raise ValueError(
                f"--shard takes K/N, the K-th of N parts with K from 0 (e.g. --shard 0/4), got {text!r}."
            )
        index, count = int(match.group(1)), int(match.group(2))
        if not 1 <= count <= MAX_SHARDS or not 0 <= index < count:
            raise ValueError(
                f"--shard {text}: K/N needs 1 <= N <= {MAX_SHARDS} and 0 <= K < N (K counts from 0)."
            )
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

    def record(self, num_lines: int, window_size: int, fingerprint: dict[str, Any], sha256: str) -> str:
        """
        The `maelmo_shard` attribute of this part's file (`fingerprint`: the job's, see `job.py`; `sha256`:
        the file's `content_sha256`).
        """
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
                "sha256": sha256,
            }
        )
