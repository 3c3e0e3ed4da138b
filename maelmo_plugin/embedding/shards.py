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
part it is, of the run's fingerprint, and the sha256 of its contents (`content_sha256`), which `maelmo-merge`
checks: a shard changed since it was written is refused.
"""

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

import h5py

SHARD_ATTRIBUTE = "maelmo_shard"
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


def content_sha256(file: h5py.File, lines: range) -> str:
    """
    The sha256 of what a shard holds for `lines`: each line's dataset (name, dtype, shape, values, `tokens`)
    in line order, then `sentence_to_index`. The caller has checked that these are the file's datasets.
    """
    digest = hashlib.sha256()
    for index in lines:
        dataset = file[str(index)]
        tokens = [str(token) for token in dataset.attrs.get("tokens", [])]
        digest.update(json.dumps([index, str(dataset.dtype), list(dataset.shape), tokens]).encode("utf-8"))
        digest.update(dataset[()].tobytes())
    index_text = file["sentence_to_index"][0]
    digest.update(index_text if isinstance(index_text, bytes) else str(index_text).encode("utf-8"))
    return digest.hexdigest()
