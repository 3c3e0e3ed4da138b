"""
Runs `examples/finetune_glue_hf/finetune_glue_hf.py` as a user of an export runs it, with `transformers` alone,
and writes what became of each run to a JSON file for `tests/finetune_glue_hf_test.py`. Run as a script, in a
subprocess under the venv's transformers 4.x or (with PYTHONPATH=<venv>/transformers5) 5.x:

    python tests/hf/run_finetune_glue.py REQUEST.json OUTPUT.json

REQUEST holds `script` (its path) and `runs` ({name: its command-line arguments}). Importing allennlp or
maelmo_plugin fails in this process (`without_plugin.py`). Each run executes the script as `__main__`, as
`python finetune_glue_hf.py ...` would; the runs share this process so that transformers is imported once.
OUTPUT gets, per run, the kept model's labels as `AutoModelForSequenceClassification` reloads it.
"""

import json
import runpy
import sys
import time

import without_plugin  # noqa: F401  first: from here on allennlp and maelmo_plugin cannot be imported

# isort: split
import transformers
from transformers import AutoModelForSequenceClassification


def main(request_file: str, output_file: str) -> None:
    with open(request_file, encoding="utf-8") as file:
        request = json.load(file)
    runs = {}
    for name, arguments in request["runs"].items():
        start = time.perf_counter()
        sys.argv = [request["script"], *arguments]
        runpy.run_path(request["script"], run_name="__main__")
        output_dir = arguments[arguments.index("--output-dir") + 1]
        config = AutoModelForSequenceClassification.from_pretrained(output_dir, trust_remote_code=True).config
        runs[name] = {
            "id2label": {str(index): label for index, label in config.id2label.items()},
            "num_labels": config.num_labels,
            "problem_type": config.problem_type,
            "seconds": time.perf_counter() - start,
        }
    with open(output_file, "w", encoding="utf-8") as file:
        json.dump({"transformers_version": transformers.__version__, "runs": runs}, file)


if __name__ == "__main__":
    main(*sys.argv[1:])
