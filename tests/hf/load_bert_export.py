"""
Loads a BERT* export with `transformers` alone (its own BertForMaskedLM: no remote code) and writes the
masked-LM logits of some sentences, for `export_bert_test.py`. Run as a script in a subprocess:

    python tests/hf/load_bert_export.py REQUEST.json OUTPUT.json

REQUEST holds `export` (the directory) and `sentences`.
"""

import json
import sys

import without_plugin  # noqa: F401  first: from here on allennlp and maelmo_plugin cannot be imported

# isort: split
import torch
import transformers
from transformers import AutoModelForMaskedLM, AutoTokenizer

if __name__ == "__main__":
    request = json.load(open(sys.argv[1]))
    tokenizer = AutoTokenizer.from_pretrained(request["export"])
    model = AutoModelForMaskedLM.from_pretrained(request["export"]).eval()
    batch = tokenizer(request["sentences"], padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits
    output = {
        "transformers_version": transformers.__version__,
        "class": type(model).__name__,
        "input_ids": batch["input_ids"].tolist(),
        "logits": logits.tolist(),
    }
    json.dump(output, open(sys.argv[2], "w"))
