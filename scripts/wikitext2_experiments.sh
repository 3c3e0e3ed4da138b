#!/usr/bin/env bash
# The WikiText-2 runs behind docs/results.md (pre-training, and the paper's Tables 5-6 ablations).
# Each run is a variant of a config under training_config/lm/, written to $RUNS/configs/<name>.jsonnet so
# that the file says what ran. Runs go sequentially, pinned to one CPU core with one thread so that every
# run's word-pieces/s is measured alike; each writes $RUNS/<name>/, is skipped when it has finished, and
# scripts/summarize_runs.py prints the tables.
#
# Usage: WIKITEXT2_DIR=path/to/wikitext-2 MAELMO_VOCAB=bert-base-cased-vocab.txt \
#        [MAELMO_WT2_RUNS=runs/wt2] [MAELMO_CORE=0] scripts/wikitext2_experiments.sh [main|elmo|ablations|all]
# WIKITEXT2_DIR holds WikiText-2's train.txt and valid.txt (the tokenized release that pytorch/examples'
# word_language_model reads).
set -euo pipefail
cd "$(dirname "$0")/.."
WT2=$(realpath "${WIKITEXT2_DIR:?set WIKITEXT2_DIR to the folder of WikiText-2 train.txt and valid.txt}")
VOCAB=$(realpath "${MAELMO_VOCAB:?set MAELMO_VOCAB to a word-piece vocab.txt (the paper: bert-base-cased)}")
RUNS=${MAELMO_WT2_RUNS:-runs/wt2}
mkdir -p "$RUNS/configs"
RUNS=$(realpath "$RUNS")
ARTICLES='document_start_pattern: "^ = [^=].* = $"'  # a WikiText article starts at its " = Title = " line

train() {  # name, base config, train file, validation file, Jsonnet fields of the variant
  local name=$1 base=$2 train=$3 validation=$4 fields=$5
  if [ -f "$RUNS/$name/metrics.json" ]; then echo "[skip] $name"; return; fi
  local config="$RUNS/configs/$name.jsonnet"
  cat > "$config" <<JSONNET
// $name, written by scripts/wikitext2_experiments.sh
(import "$PWD/training_config/lm/$base") + {
  data:: { train: "$train", validation: "$validation", vocab: "$VOCAB" },
  $fields
}
JSONNET
  echo "[run] $name"
  env OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 taskset -c "${MAELMO_CORE:-0}" .venv/bin/allennlp train "$config" \
    -s "$RUNS/$name" -f --include-package maelmo_plugin --file-friendly-logging > "$RUNS/$name.log" 2>&1
}

main() {
  # The small config as it is (sequence 64, batch 32, BTBPTT, k=1) on all of WikiText-2, one epoch.
  train main pretrain_small.jsonnet "$WT2/train.txt" "$WT2/valid.txt" "sizes+:: { $ARTICLES, epochs: 1 },"
}

elmo() {
  # The ELMo biLM baseline at the same sizes, on the same data and budget as main (the GLUE comparison's
  # baseline encoder).
  train elmo pretrain_elmo_small.jsonnet "$WT2/train.txt" "$WT2/valid.txt" "sizes+:: { $ARTICLES, epochs: 1 },"
}

ablations() {
  # Same data and number of updates for every run: the first 4,000 lines of WikiText-2's training set,
  # one epoch, 640 word-pieces per update (sequence 20 x batch 32, or 128 x 5); validation on the first
  # 1,500 lines of its validation set, in the small config's 64-token windows for every run (only the
  # training loader's windows change), so that every row is scored on the same windows and masks.
  local train_file="$RUNS/train-4000.txt" valid_file="$RUNS/valid-1500.txt"
  head -n 4000 "$WT2/train.txt" > "$train_file"
  head -n 1500 "$WT2/valid.txt" > "$valid_file"
  local short='data_loader+: { sequence_length: 20, batch_size: 32 },'
  ablation() {  # name, base config, seed, extra sizes, extra fields
    train "$1" "$2" "$train_file" "$valid_file" "sizes+:: { $ARTICLES, epochs: 1 $4 }, settings+:: { seed: $3 }, $5"
  }
  for seed in 1 2 3; do
    ablation "btbptt-seq20-seed$seed" pretrain_small.jsonnet $seed "" "$short"
    ablation "tbptt-seq20-seed$seed" pretrain_small.jsonnet $seed "" \
      'data_loader+: { sequence_length: 20, batch_size: 32, bidirectional: false },'
  done
  ablation btbptt-seq20-k4 pretrain_small.jsonnet 1 ", mask_sets: 4" "$short"
  ablation btbptt-seq128 pretrain_small.jsonnet 1 "" 'data_loader+: { sequence_length: 128, batch_size: 5 },'
  ablation btbptt-seq20-elmo-cell pretrain_small.jsonnet 1 "" "$short model+: { encoder+: { cell: \"elmo\" } },"
  ablation elmo-baseline-seq20 pretrain_elmo_small.jsonnet 1 "" "$short"
}

case "${1:-all}" in
  main) main ;;
  elmo) elmo ;;
  ablations) ablations ;;
  all) main; elmo; ablations ;;
  *) echo "usage: $0 [main|elmo|ablations|all]" >&2; exit 2 ;;
esac
.venv/bin/python scripts/summarize_runs.py "$RUNS"
