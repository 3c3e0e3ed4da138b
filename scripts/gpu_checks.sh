#!/usr/bin/env bash
# The GPU checks in one go, for a machine with a CUDA device where the plugin imports (scripts/setup.sh's .venv,
# or any Python 3.11+ with the stack): the `gpu`-marked tests, the benchmarks' GPU rows (pre-training update
# against BERT-base, the Hugging Face export against the plugin, embedding throughput against AllenNLP's Elmo),
# and a few hundred paper-size pre-training updates of Masked ELMo and of BERT-base through `allennlp train`
# with their configs (AMP on, as on any GPU), each timed by its `maelmo_throughput` callback.
#
#   WIKITEXT2_DIR=path/to/wikitext-2 MAELMO_VOCAB=path/to/bert-base-cased-vocab.txt scripts/gpu_checks.sh [OUT]
#
# WIKITEXT2_DIR holds train.txt and valid.txt (or .txt.xz). Each step has a time limit, and a step that fails
# does not stop the next; everything is written to OUT/checks.log (default runs/gpu_checks), the runs'
# throughput and metrics to OUT/<run>_*.json. ONLY="gpu_tests train_bert ..." runs only the steps named.
# docs/benchmarks.md records its runs (docs/performance_history.md#the-gpu-leases); the log and files of a
# run a page quotes are kept in benchmarks/results/gpu/ (never under docs/, which holds pages and figures only).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
OUT=$(mkdir -p "${1:-runs/gpu_checks}" && cd "${1:-runs/gpu_checks}" && pwd)
LOG="$OUT/checks.log"
: "${WIKITEXT2_DIR:?set WIKITEXT2_DIR to the folder of WikiText-2's train.txt and valid.txt}"
: "${MAELMO_VOCAB:?set MAELMO_VOCAB to bert-base-cased's vocab.txt}"
export PYTHONUNBUFFERED=1

step() { # step NAME SECONDS COMMAND...: runs COMMAND with a time limit, its output into the log
  local name=$1 limit=$2 start=$SECONDS
  shift 2
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return; fi
  echo "=== $name: $*" | tee -a "$LOG"
  timeout "$limit" "$@" >>"$LOG" 2>&1
  echo "=== $name: exit $? after $((SECONDS - start)) s" | tee -a "$LOG"
}

pick() { # the plain or the xz-compressed file (the corpus reader reads both)
  if [ -f "$1" ]; then echo "$1"; else echo "$1.xz"; fi
}

step environment 60 "$PY" -c "
import torch, transformers, allennlp.version, maelmo_plugin
print('torch', torch.__version__, 'cuDNN', torch.backends.cudnn.version(), 'transformers', transformers.__version__,
      'allennlp', allennlp.version.VERSION, torch.cuda.get_device_name(0))"
step gpu_tests 240 "$PY" -m pytest -m gpu -p no:cacheprovider -q -rs tests
cd benchmarks
# The update against BERT-base in one invocation each, Masked ELMo with its CUDA graphs and eagerly; TF32 set the
# same on both sides (off, then on); bf16 at k = 1 and at the configs' k = 4.
step pretraining_step_paper_fp32 60 "$PY" pretraining_step.py --device cuda --paper --repeats 5 --tf32 off
step pretraining_step_paper_tf32 60 "$PY" pretraining_step.py --device cuda --paper --repeats 5 --tf32 on
step pretraining_step_paper_bf16 60 "$PY" pretraining_step.py --device cuda --paper --repeats 10 --autocast bf16
step pretraining_step_paper_bf16_k4 90 "$PY" pretraining_step.py --device cuda --paper --repeats 10 --autocast bf16 \
  --mask-sets 4
step hf_export_paper_fp32 35 "$PY" hf_export.py --device cuda --size 768x4096 --vocab-size 28996 --batch-size 64 \
  --sequence-length 128 --repeats 5
step hf_export_paper_bf16 35 "$PY" hf_export.py --device cuda --size 768x4096 --vocab-size 28996 --batch-size 64 \
  --sequence-length 128 --repeats 5 --autocast bf16
step embedding_throughput 150 "$PY" embedding_throughput.py --device cuda --sentences 128 --sentences-batch-1 16
cd ..

# Paper-size pre-training through the configs, one epoch of the corpus given (AMP on: cuda_device 0).
for run in masked_elmo bert; do
  config=training_config/pretrain.jsonnet
  fields="sizes+:: { epochs: 1 }"
  if [ "$run" = bert ]; then
    config=training_config/lm/pretrain_bert.jsonnet
    fields="sizes+:: { epochs: 1, warmup_steps: 30 }"
  fi
  echo "(import \"$PWD/$config\") + { $fields }" >"$OUT/$run.jsonnet"
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" train_$run "* ]]; then continue; fi
  rm -rf "$OUT/$run"
  MAELMO_TRAIN_PATH=$(pick "$WIKITEXT2_DIR/train.txt") MAELMO_VALIDATION_PATH=$(pick "$WIKITEXT2_DIR/valid.txt") \
    step "train_$run" "${TRAIN_SECONDS:-170}" "$PY" -m allennlp train "$OUT/$run.jsonnet" -s "$OUT/$run" \
    --include-package maelmo_plugin
  for kept in throughput metrics; do
    [ -f "$OUT/$run/$kept.json" ] && cp "$OUT/$run/$kept.json" "$OUT/${run}_$kept.json"
  done
  rm -rf "$OUT/$run" # checkpoints and the archive: not kept
done
echo "=== done" | tee -a "$LOG"
