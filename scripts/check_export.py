"""
Checks an export against the archive it came from, under the venv's transformers (4.x) and, when
`scripts/setup.sh` installed it, under 5.x in a process where AllenNLP and the plugin cannot be imported:

    .venv/bin/python scripts/check_export.py runs/sample/model.tar.gz runs/sample/hf

It prints the sizes, the largest difference between the export's L + 1 hidden states and the plugin's
representations on a padded batch, and the fill-mask answers of both with their largest difference.
"""

import argparse
import importlib.abc
import json
import os
import subprocess
import sys

# Sentences in the style of the sample corpus (the Python Language Reference).
SENTENCES = [
    "The break statement terminates the nearest enclosing loop.",
    "A function definition is an executable statement.",
    "Names are bound to objects.",
]
FILL = "The break statement terminates the nearest enclosing [MASK]."
BLOCKED = ("allennlp", "allennlp_models", "maelmo_plugin")


class _Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked: the export must load without it")


def hf_outputs(export: str) -> dict:
    """The export's hidden states and fill-mask answers, computed with transformers alone."""
    import torch
    import transformers
    from transformers import AutoModel, AutoTokenizer, pipeline

    tokenizer = AutoTokenizer.from_pretrained(export, trust_remote_code=True)
    model = AutoModel.from_pretrained(export, trust_remote_code=True).eval()
    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = torch.stack(model(**batch, output_hidden_states=True).hidden_states)
    fill = pipeline("fill-mask", model=export, trust_remote_code=True, top_k=5)(FILL)
    return {
        "version": transformers.__version__,
        "hidden": hidden.tolist(),
        "fill": [(tokenizer.convert_ids_to_tokens(a["token"]), a["score"]) for a in fill],
    }


def plugin_outputs(archive: str) -> dict:
    import torch

    from maelmo_plugin.api import MaskedElmo

    elmo = MaskedElmo.from_archive(archive)
    # The same [CLS] ... [SEP] rows as the HF tokenizer's, padded with 0: the plugin's own representations.
    vectors = elmo.embed(SENTENCES)
    length = max(v.shape[1] for v in vectors)
    hidden = torch.zeros(vectors[0].shape[0], len(vectors), length, vectors[0].shape[2])
    for row, v in enumerate(vectors):
        hidden[:, row, : v.shape[1]] = torch.from_numpy(v)
    masks = elmo.fill_mask(FILL, top_k=5)["masks"][0]
    return {"hidden": hidden, "fill": list(zip(masks["wordpieces"], masks["probabilities"]))}


def size(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("archive")
    parser.add_argument("export")
    parser.add_argument("--hf-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hf_only:
        sys.meta_path.insert(0, _Blocked())
        print(json.dumps(hf_outputs(args.export)))
        return
    import torch

    plugin = plugin_outputs(args.archive)
    print(f"archive {size(args.archive) / 2**20:.2f} MiB, export {size(args.export) / 2**20:.2f} MiB")
    print("plugin fill-mask:", [(piece, round(p, 4)) for piece, p in plugin["fill"]])
    transformers5 = os.path.join(sys.prefix, "transformers5")
    for pythonpath in ("", transformers5 if os.path.isdir(transformers5) else None):
        if pythonpath is None:
            print("transformers 5: not installed (scripts/setup.sh installs it)")
            continue
        env = {**os.environ, "PYTHONPATH": pythonpath}
        command = [sys.executable, __file__, args.archive, args.export, "--hf-only"]
        hf = json.loads(subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout)
        difference = float((torch.tensor(hf["hidden"]) - plugin["hidden"]).abs().max())
        same_pieces = [piece for piece, _ in hf["fill"]] == [piece for piece, _ in plugin["fill"]]
        fill_difference = max(abs(a[1] - b[1]) for a, b in zip(hf["fill"], plugin["fill"]))
        print(
            f"transformers {hf['version']}: max |hidden - plugin| {difference:.1e}; fill-mask same top 5: "
            f"{same_pieces}, max |probability difference| {fill_difference:.1e}"
        )


if __name__ == "__main__":
    main()
