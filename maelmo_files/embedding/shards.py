"""
Shards: `maelmo-embed --shard K/N` embeds the K-th of N parts of its input, so that N machines, GPUs or
jobs of any scheduler (a Slurm array, GNU parallel, a loop over GPUs) embed one file together; then
`maelmo-merge` joins the parts (`merge.py`).

The parts are runs of whole windows (`maelmo_plugin/embedding/pipeline.py` reads the input `SORTED_BATCHES`
batches at a time and sorts each window by length): shard K embeds windows K * W // N to (K + 1) * W // N - 1
of the input's W.
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

import h5py

SHARD_ATTRIBUTE = "maelmo_shard"


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
