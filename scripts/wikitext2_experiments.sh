#!/usr/bin/env bash
# The WikiText-2 runs behind the README's results tables (issue: training procedure, paper Tables 5-6).
# Runs sequentially, pinned to one CPU core with one thread so that every run's word-pieces/s is measured
# alike (about 70 minutes); each run writes $RUNS/<name>/, and scripts/summarize_runs.py prints the
# tables. Usage: [MAELMO_WT2_RUNS=runs/wt2] scripts/wikitext2_experiments.sh [main|elmo|ablations|all]
set -euo pipefail
cd "$(dirname "$0")/.."
WT2=${WIKITEXT2_DIR:-../shared/data/wikitext-2}
export MAELMO_VOCAB=${MAELMO_VOCAB:-../shared/data/vocab/bert-base-cased-vocab.txt}
export MAELMO_VALIDATION_PATH=$WT2/valid.txt
ARTICLES='"dataset_reader.document_start_pattern": "^ = [^=].* = $"'
RUNS=${MAELMO_WT2_RUNS:-runs/wt2}
mkdir -p "$RUNS"

train() {  # name, config, overrides (JSON body without braces), extra environment...
  local name=$1 config=$2 overrides=$3; shift 3
  if [ -f "$RUNS/$name/metrics.json" ]; then echo "[skip] $name"; return; fi
  echo "[run] $name"
  env OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "$@" taskset -c "${MAELMO_CORE:-0}" .venv/bin/allennlp train "training_config/$config" -s "$RUNS/$name" -f \
    --include-package maelmo_plugin --file-friendly-logging -o "{$ARTICLES, $overrides}" > "$RUNS/$name.log" 2>&1
}

seeded() { echo "\"random_seed\": $1, \"numpy_seed\": $1, \"pytorch_seed\": $1"; }

main() {
  # The small config as it is (sequence 64, batch 32, BTBPTT, k=1) on all of WikiText-2, one epoch.
  MAELMO_TRAIN_PATH=$WT2/train.txt train main pretrain_small.jsonnet '"trainer.num_epochs": 1'
}

elmo() {
  # The ELMo biLM baseline at the same sizes, on the same data and budget as main (the GLUE comparison's
  # baseline encoder).
  MAELMO_TRAIN_PATH=$WT2/train.txt train elmo pretrain_elmo_small.jsonnet '"trainer.num_epochs": 1'
}

ablations() {
  # Same data and number of updates for every run: the first 4,000 lines of WikiText-2's training set,
  # one epoch, 640 word-pieces per update (sequence 20 x batch 32, or 128 x 5); validation on the first
  # 1,500 lines of its validation set, in the small config's 64-token windows for every run, so that every
  # row is scored on the same windows and masks.
  head -n 4000 "$WT2/train.txt" > "$RUNS/train-4000.txt"
  head -n 1500 "$WT2/valid.txt" > "$RUNS/valid-1500.txt"
  export MAELMO_TRAIN_PATH="$RUNS/train-4000.txt" MAELMO_VALIDATION_PATH="$RUNS/valid-1500.txt"
  local short='"data_loader.sequence_length": 20, "data_loader.batch_size": 32, "trainer.num_epochs": 1'
  for seed in 1 2 3; do
    train "btbptt-seq20-seed$seed" pretrain_small.jsonnet "$short, $(seeded $seed)" MAELMO_SEED=$seed
    train "tbptt-seq20-seed$seed" pretrain_small.jsonnet "$short, \"data_loader.bidirectional\": false, $(seeded $seed)" MAELMO_SEED=$seed
  done
  train "btbptt-seq20-k4" pretrain_small.jsonnet "$short, $(seeded 1)" MAELMO_SEED=1 MAELMO_MASK_SETS=4
  train "btbptt-seq128" pretrain_small.jsonnet \
    '"data_loader.sequence_length": 128, "data_loader.batch_size": 5, "trainer.num_epochs": 1, '"$(seeded 1)" MAELMO_SEED=1
  train "btbptt-seq20-elmo-cell" pretrain_small.jsonnet "$short, \"model.encoder.cell\": \"elmo\", $(seeded 1)" MAELMO_SEED=1
  train "elmo-baseline-seq20" pretrain_elmo_small.jsonnet "$short, $(seeded 1)" MAELMO_SEED=1
}

case "${1:-all}" in
  main) main ;;
  elmo) elmo ;;
  ablations) ablations ;;
  all) main; elmo; ablations ;;
  *) echo "usage: $0 [main|elmo|ablations|all]" >&2; exit 2 ;;
esac
.venv/bin/python scripts/summarize_runs.py "$RUNS"
