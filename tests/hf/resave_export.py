"""
Loads an export with `transformers` alone and saves it again with `save_pretrained`, once per auto class it
serves, or loads those copies in a later process; writes what each model computed to a JSON file for
`resave_test.py`. Run as a script, in a subprocess under the venv's transformers 4.x or 5.x:

    python tests/hf/resave_export.py REQUEST.json OUTPUT.json

REQUEST holds `export` (an export directory), `copies` (the directory of the copies) and `step`: "save"
(load each from the export, compute, save into `copies`) or "load" (load each copy, compute). Importing
allennlp or maelmo_plugin fails in this process (`without_plugin.py`).
"""

import json
import sys

import without_plugin  # noqa: F401  first: from here on allennlp and maelmo_plugin cannot be imported

# isort: split
import torch
import transformers
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForMaskedLM,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    AutoTokenizer,
)

SENTENCES = ["The cat sleeps on the house.", "A dog eats a fish."]
# (copy, auto class that loads the export, auto class that loads the copy). "encoder_of_masked_lm" is the
# encoder inside a masked LM: a class that no auto class loaded, so it comes before "encoder" (5.x keeps a
# remote module's classes for the process, so loading with AutoModel would register it).
CASES = [
    ("encoder_of_masked_lm", AutoModelForMaskedLM, AutoModel),
    ("encoder", AutoModel, AutoModel),
    ("masked_lm", AutoModelForMaskedLM, AutoModelForMaskedLM),
    ("sequence_classification", AutoModelForSequenceClassification, AutoModelForSequenceClassification),
    ("token_classification", AutoModelForTokenClassification, AutoModelForTokenClassification),
]


def _output(model, batch) -> list:
    with torch.no_grad():
        output = model.eval()(**batch)
    # Shape: (batch_size, num_tokens, dim or vocab_size or num_labels) or (batch_size, num_labels)
    return (output.logits if hasattr(output, "logits") else output.last_hidden_state).tolist()


def main(request_file: str, output_file: str) -> None:
    with open(request_file) as request_json:
        request = json.load(request_json)
    export, copies, step = request["export"], request["copies"], request["step"]
    batch = AutoTokenizer.from_pretrained(export)(SENTENCES, padding=True, return_tensors="pt")
    result = {"transformers_version": transformers.__version__}
    if step == "save":
        config = AutoConfig.from_pretrained(export, trust_remote_code=True)
        config.save_pretrained(f"{copies}/config")
        for name, from_export, _ in CASES:
            model = from_export.from_pretrained(export, trust_remote_code=True)
            if name == "encoder_of_masked_lm":
                model = model.masked_elmo
            model.save_pretrained(f"{copies}/{name}")
            result[name] = {"class": type(model).__name__, "output": _output(model, batch)}
    else:
        config = AutoConfig.from_pretrained(f"{copies}/config", trust_remote_code=True)
        result["config"] = {"class": type(config).__name__, "hidden_size": config.hidden_size}
        for name, _, from_copy in CASES:
            model = from_copy.from_pretrained(f"{copies}/{name}", trust_remote_code=True)
            result[name] = {"class": type(model).__name__, "output": _output(model, batch)}
    with open(output_file, "w") as output:
        json.dump(result, output)


if __name__ == "__main__":
    main(*sys.argv[1:])
