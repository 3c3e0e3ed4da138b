#!/usr/bin/env bash
# The package as a user installs it (docs/install.md): builds the wheel, installs it with the documented
# command into a fresh venv, and from a directory outside the checkout starts commands with the network cut
# (quiet: nothing on stderr), trains the Quickstart for one epoch from the packaged config and sample corpus,
# embeds with its archive, and runs the Python API. .ci/run calls it; needs .venv (for uv) and about 5 min.
# PYTHON picks the interpreter of the fresh venv.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
uv=$repo/.venv/bin/uv
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$uv" build -q --wheel -o "$work/dist" "$repo"
wheel=$(ls "$work"/dist/*.whl)
echo "[wheel] $(basename "$wheel"), $(du -k "$wheel" | cut -f1) kB"
"${PYTHON:-python3}" -m venv "$work/venv"
# torch as the user's pip configuration picks it (docs/install.md), then the documented command.
"$work/venv/bin/python" -m pip install -q "torch==2.14.1" "torchvision==0.29.1"
VIRTUAL_ENV=$work/venv "$uv" pip install -q "$wheel" --override "$repo/overrides.txt" --excludes "$repo/excludes.txt"
bin=$work/venv/bin
mkdir "$work/outside" && cd "$work/outside"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HOME=$work/outside
"$bin/python" - "$work/venv" <<'PY'
import sys
import maelmo_plugin
assert maelmo_plugin.__file__.startswith(sys.argv[1]), f"imported from {maelmo_plugin.__file__}, not the venv"
PY

# No network, nothing on stderr: `unshare -n` where this user may make a network namespace.
offline=()
if unshare -n true 2>/dev/null; then offline=(unshare -n); else echo "[wheel] unshare -n is not allowed here: starting with the network"; fi
for command in "maelmo --help" "allennlp train --help --include-package maelmo_plugin"; do
  "${offline[@]}" "$bin"/$command >stdout.txt 2>stderr.txt || { cat stderr.txt; exit 1; }
  if [ -s stderr.txt ]; then echo "[wheel] '$command' wrote to stderr:"; cat stderr.txt; exit 1; fi
done
echo "[wheel] maelmo --help and allennlp train --help: offline, nothing on stderr"

"$bin/maelmo" train lm/pretrain_small -s run -o '{"trainer.num_epochs": 1}' >train.log 2>&1 || { tail -n 30 train.log; exit 1; }
"$bin/python" -c 'import json; m = json.load(open("run/metrics.json")); print("[wheel] one epoch from the packaged config: validation perplexity %.1f" % m["validation_perplexity"])'
printf 'The for statement iterates over a sequence.\nA class definition defines a class object.\n' >lines.txt
"$bin/maelmo" maelmo-embed run/model.tar.gz lines.txt vectors.hdf5 >embed.log 2>&1 || { tail -n 30 embed.log; exit 1; }
"$bin/python" - <<'PY'
import h5py
import numpy as np

from maelmo_plugin.api import MaskedElmo

with h5py.File("vectors.hdf5", "r") as vectors:
    written = vectors["0"][()]
elmo = MaskedElmo.from_archive("run/model.tar.gz")
embedded = elmo.embed(["The for statement iterates over a sequence."])[0]
assert embedded.shape == written.shape and np.allclose(embedded, written, atol=1e-5), (embedded.shape, written.shape)
print(f"[wheel] maelmo-embed and the Python API give line 0 the same vectors, shape {written.shape}")
PY
