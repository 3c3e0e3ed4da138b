#!/usr/bin/env bash
# Creates .venv in the repository and installs the tested stack (idempotent: a second run is fast).
# One resolver install of the package and its `dev` extra: uv applies overrides.txt and excludes.txt, which
# replace allennlp 2.10.1's stale pins (torch<1.13 has no wheels for Python 3.11+) by the tested ranges, the
# same files a user's wheel install takes (docs/install.md), so the two cannot drift.
# PYTHON picks the interpreter (3.11 to 3.14), VENV the directory (relative to the repository root).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${VENV:-.venv}
made_with=""
if [ -x "$VENV/bin/python" ]; then PY="$VENV/bin/python" made_with="$VENV"; fi
# The range docs/stack.md was tested on; 3.15 may lack wheels (torch, tokenizers) and would build from source.
"$PY" -c 'import sys; v = sys.version_info[:2]; sys.exit(None if (3, 11) <= v <= (3, 14) else "[setup] %s is Python %d.%d; the stack supports 3.11 to 3.14: set PYTHON to one of those%s" % ((sys.executable,) + v + (" and delete " + sys.argv[1] + ", which was made with this one" if sys.argv[1] else "",)))' "$made_with"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
source "$VENV/bin/activate"
stamp=$VENV/.maelmo-installed
want=$(cat overrides.txt excludes.txt scripts/setup.sh pyproject.toml maelmo_plugin_startup.pth 2>/dev/null | sha1sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
echo "[setup] installing the stack into $VENV (first run: about 2 minutes)" >&2
python -m pip install -q --upgrade pip "uv==0.13.9"
# torch first, through pip, so that pip's configuration picks its build (a CPU or CUDA index, a local wheel):
# the resolver below keeps an installed torch that satisfies the overrides. torchvision must be the one built
# for that torch (allennlp imports it; a mismatched pair fails with `operator torchvision::nms does not exist`).
python -m pip install -q "torch==2.14.1" "torchvision==0.29.1"
uv pip install -q -e ".[dev]" --override overrides.txt --excludes excludes.txt
# transformers 5.x beside the pinned 4.x (which AllenNLP needs), for tests/hf to load the Hugging Face export
# under both: --target keeps it, and the newer huggingface_hub and tokenizers it brings, out of the venv, and
# tests put it first on PYTHONPATH in a subprocess only. It does not pull torch. accelerate (which Trainer
# needs to fine-tune the task heads) and sentence-transformers 6.x (to load an export's sentence-transformers
# layout without the plugin) go in with --no-deps, so that they bring no other torch: what they import
# besides is there already. accelerate 1.15.0 works with torch 2.14.1 under transformers 4.43 and 5.23.
uv pip install -q --target "$VIRTUAL_ENV/transformers5" "transformers==5.23.0"
uv pip install -q --no-deps --target "$VIRTUAL_ENV/transformers5" "accelerate==1.15.0" "psutil==7.2.2" \
  "sentence-transformers==6.2.0"
# The start-up hook that a wheel install puts in site-packages (setup.py; maelmo_startup.py says what it
# does), which an editable install lacks. An older setup's stub and hook, which it replaces, go.
site_packages=$(python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
cp maelmo_plugin_startup.pth "$site_packages/"
rm -f "$site_packages/maelmo_quiet_dependencies.pth"
rmdir "$VIRTUAL_ENV/nltk_data/tokenizers/punkt" "$VIRTUAL_ENV/nltk_data/tokenizers" "$VIRTUAL_ENV/nltk_data" 2>/dev/null || true
echo "$want" > "$stamp"
