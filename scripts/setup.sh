#!/usr/bin/env bash
# Creates .venv in the repository and installs the tested stack (idempotent: a second run is fast).
# Why not a plain `pip install -e .`: allennlp 2.10.1 pins torch<1.13, which has no wheels for Python 3.11+,
# so allennlp and allennlp-models come in with --no-deps and their real dependencies from requirements.txt.
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
want=$(cat requirements.txt scripts/setup.sh pyproject.toml 2>/dev/null | sha1sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
echo "[setup] installing the stack into $VENV (first run: about 2 minutes)" >&2
python -m pip install -q --upgrade pip "setuptools<81" wheel
# torch 2.x with the matching torchvision (allennlp imports torchvision; a mismatched pair fails at import).
python -m pip install -q "torch==2.14.1" "torchvision==0.29.1"
# The real dependencies first, then allennlp itself with --no-deps: installed in this order, pip's resolver
# never sees allennlp's stale pins, so it has no conflict to report.
python -m pip install -q -r requirements.txt
python -m pip install -q --no-deps "allennlp==2.10.1" "allennlp-models==2.10.1" "fairscale==0.4.6"
python -m pip install -q --no-deps -e .
# transformers 5.x beside the pinned 4.x (which AllenNLP needs), for tests/hf to load the Hugging Face export
# under both. --target keeps it, and the newer huggingface_hub and tokenizers it brings, out of site-packages;
# it does not pull torch. Tests put it first on PYTHONPATH in a subprocess only, so the pins that pip would
# report against the venv (huggingface_hub<2 for cached-path) do not apply to it: --no-warn-conflicts.
python -m pip install -q --upgrade --no-warn-conflicts --target "$VIRTUAL_ENV/transformers5" "transformers==5.23.0"
# accelerate, which Trainer needs (tests/hf fine-tunes the task heads with it), in both places: --no-deps,
# so that it brings no other torch; psutil is its one dependency the stack lacks. 1.15.0 works with torch
# 2.14.1 under transformers 4.43 and 5.23.
python -m pip install -q --no-deps "accelerate==1.15.0" "psutil==7.2.2"
python -m pip install -q --no-deps --upgrade --no-warn-conflicts --target "$VIRTUAL_ENV/transformers5" \
  "accelerate==1.15.0" "psutil==7.2.2"
# sentence-transformers 6.x (it needs transformers 5) into the same directory, for tests/hf to load an export's
# sentence-transformers layout (`maelmo-export --sentence-transformers`) without the plugin. --no-deps: what it
# imports besides is there already (torch, numpy, scikit-learn and scipy in the venv; transformers,
# huggingface_hub, tokenizers, tqdm in transformers5). About 4 s.
python -m pip install -q --no-deps --upgrade --no-warn-conflicts --target "$VIRTUAL_ENV/transformers5" \
  "sentence-transformers==6.2.0"
# The `onnx` extra (pyproject.toml), for the ONNX export and tests/onnx: the exporter (onnx, onnxscript) and
# ONNX Runtime, verified with torch 2.14.1; they add packages and upgrade none of the stack's.
python -m pip install -q "onnx==1.23.2" "onnxscript==0.7.2" "onnxruntime==1.32.0"
# The `ray` extra, for bulk embedding on a Ray cluster and tests/embedding/ray_data_test.py; it upgrades none of
# the stack's packages.
python -m pip install -q "ray[data]==2.60.0"
# The `dev` extra's linter, formatter and type checker, at the versions whose rules pyproject.toml pins; .ci/run
# runs all three.
python -m pip install -q "ruff==0.17.6" "mypy==2.4.1"
# allennlp_models calls nltk.download("punkt") at import when punkt is missing: an empty stub dir on
# nltk's default path (sys.prefix/nltk_data) stops that network call.
mkdir -p "$VIRTUAL_ENV/nltk_data/tokenizers/punkt"
# `allennlp` imports fairscale and allennlp_models (hence rouge) before any plugin can install warning
# filters, so every command would open with four deprecation warnings about code we don't own. A .pth
# line runs at interpreter start in this venv only and ignores exactly those sources (maelmo_plugin/_quiet.py
# does the same for users who install the plugin elsewhere).
site_packages=$(python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
cat > "$site_packages/maelmo_quiet_dependencies.pth" <<'PTH'
import warnings; warnings.filterwarnings("ignore", category=FutureWarning, module=r"fairscale(\..*)?"); warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.jit\._script"); warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
PTH
echo "$want" > "$stamp"
