"""
Runs a Python block of docs/sentence_vectors.md as a user would, in a subprocess with only `transformers` (and
`sentence-transformers`) installed, and writes what it computed to a JSON file:

    python tests/hf/run_doc_snippet.py REQUEST.json OUTPUT.json

REQUEST holds `code` (the block, its paths already pointing at a fixture export). The block must leave
`model` (a SentenceTransformer) and `vectors` behind. Importing allennlp or maelmo_plugin fails here
(`without_plugin.py`).
"""

import json
import sys
from pathlib import Path

import without_plugin  # noqa: F401  first: from here on allennlp and maelmo_plugin cannot be imported

# isort: split
import transformers


def main(request_file: str, output_file: str) -> None:
    request = json.loads(Path(request_file).read_text())
    namespace: dict = {}
    exec(request["code"], namespace)
    model, vectors = namespace["model"], namespace["vectors"]
    output = {
        "transformers_version": transformers.__version__,
        "shape": list(vectors.shape),
        "similarity": model.similarity(vectors, vectors).tolist(),
    }
    Path(output_file).write_text(json.dumps(output))


if __name__ == "__main__":
    main(*sys.argv[1:])
