"""
Bulk embedding: the vectors of every line of a text file, written to HDF5 by a job that never loses work.
`pipeline.py` reads and batches the lines, `workers.py` embeds the batches (here or in worker processes),
`job.py` keeps the partial output that lets a stopped run continue. The `maelmo-embed` command, the Python
API and the benchmarks import `embed_file` from here.
"""

from maelmo_plugin.embedding.pipeline import embed_file  # noqa: F401
