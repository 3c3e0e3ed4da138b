"""
Loads an export written with `--sentence-transformers` as a `SentenceTransformer`, as a user with only
`sentence-transformers` 6.x and `transformers` 5.x would, and writes the sentence vectors it computes to a
JSON file for `sentence_transformers_test.py` to compare with the plugin. Run as a script, in a subprocess
with PYTHONPATH=<venv>/transformers5 (where scripts/setup.sh installs both):

    python tests/hf/encode_sentences.py REQUEST.json OUTPUT.json

REQUEST holds `export` (the directory) and `sentences`. Importing allennlp or maelmo_plugin fails in this
process (`without_plugin.py`), and the tests set HF_HUB_OFFLINE: everything comes from the directory.
"""

import json
import sys
from pathlib import Path

import without_plugin  # noqa: F401  first: from here on allennlp and maelmo_plugin cannot be imported

# isort: split
import sentence_transformers
import torch
import transformers
from sentence_transformers import SentenceTransformer


def main(request_file: str, output_file: str) -> None:
    request = json.loads(Path(request_file).read_text())
    sentences = request["sentences"]
    model = SentenceTransformer(request["export"], trust_remote_code=True, device="cpu")
    # Batched (padded: sentence-transformers sorts by length and pads each batch) and one by one.
    batched = model.encode(sentences, batch_size=len(sentences), convert_to_numpy=True)
    alone = [model.encode([sentence], convert_to_numpy=True)[0] for sentence in sentences]
    tokenizer = model.tokenizer
    output = {
        "transformers_version": transformers.__version__,
        "sentence_transformers_version": sentence_transformers.__version__,
        "modules": [type(module).__name__ for module in model],
        "pooling": model[1].get_config_dict(),
        "similarity": model.similarity_fn_name,
        "dimension": model.get_embedding_dimension(),
        "num_pieces": [len(tokenizer(sentence)["input_ids"]) for sentence in sentences],
        "vectors": batched.tolist(),
        "alone": [vector.tolist() for vector in alone],
        "cosine_of_first_two": float(model.similarity(batched[:1], batched[1:2])[0, 0]),
        "expected_cosine": float(
            torch.cosine_similarity(torch.tensor(batched[0]), torch.tensor(batched[1]), 0)
        ),
    }
    Path(output_file).write_text(json.dumps(output))


if __name__ == "__main__":
    main(*sys.argv[1:])
