#!/usr/bin/env bash
# The GLUE comparison of docs/results.md: the WikiText-2 Masked ELMo
# (runs/wt2/main), the ELMo biLM baseline trained on the same data and budget (runs/wt2/elmo) and the Masked
# ELMo architecture freshly initialised (random), each fine-tuned ("ft") on RTE, WNLI, CoLA and SST-2 with
# training_config/glue/<task>.jsonnet, then scored with `allennlp evaluate` on the task's dev set.
#
# A REDUCED CPU PROTOCOL, said in every run's overrides and in the README table: the paper's task head is a
# 2 x 1024 BiLSTM, 7.7-13.2 s per update on a 2-core CPU, and jiant's schedule runs for hours per task. Here
# the head's BiLSTM has 256 units per direction (MAELMO_GLUE_HIDDEN) and training stops after
# MAELMO_GLUE_VALIDATIONS validations of Table 1's interval (100 updates); everything else (data, encoder
# mix, pooling, classifier, learning rates, scheduler) is the files' own. Drop the overrides on a GPU.
#
# Usage: MAELMO_GLUE_DIR=glue_data MAELMO_VOCAB=bert-base-cased-vocab.txt \
#        scripts/glue_experiments.sh [encoder ...]      encoders: maelmo elmo random (default: all three)
# Needs scripts/wikitext2_experiments.sh main (and elmo) first. Runs are pinned to core MAELMO_CORE (0)
# with one thread, and skipped when their dev metrics exist; scripts/summarize_glue.py prints the table.
# MAELMO_GLUE_RUNS (runs/glue) is where they go.
set -euo pipefail
cd "$(dirname "$0")/.."
export MAELMO_VOCAB=${MAELMO_VOCAB:?set MAELMO_VOCAB to the vocabulary the archives were trained with}
export MAELMO_GLUE_DIR=${MAELMO_GLUE_DIR:?set MAELMO_GLUE_DIR to the folder the GLUE download script wrote}
TASKS=${MAELMO_GLUE_TASKS:-"rte wnli cola sst2"}
HIDDEN=${MAELMO_GLUE_HIDDEN:-256}
VALIDATIONS=${MAELMO_GLUE_VALIDATIONS:-2}
REDUCED="\"model.encoder\": {\"type\": \"lstm\", \"input_size\": 128, \"hidden_size\": $HIDDEN, \"num_layers\": 2, \"bidirectional\": true}, \"trainer.num_epochs\": $VALIDATIONS"
RUNS=${MAELMO_GLUE_RUNS:-runs/glue}
mkdir -p "$RUNS"

declare -A ENCODER=([maelmo]=archive-ft [elmo]=archive-ft [random]=random-ft)
declare -A ARCHIVE=([maelmo]=runs/wt2/main/model.tar.gz [elmo]=runs/wt2/elmo/model.tar.gz [random]=runs/wt2/main/model.tar.gz)
declare -A DEV=([rte]=RTE [wnli]=WNLI [cola]=CoLA [sst2]=SST-2)

run() {  # encoder, task
  local name=$1-$2 out=$RUNS/$1-$2
  if [ -f "$out/dev_metrics.json" ]; then echo "[skip] $name"; return; fi
  echo "[run] $name"
  # The encoder is the config's settings.encoder: a two-line variant file of the task's config.
  local config=$RUNS/configs/$name.jsonnet
  mkdir -p "$RUNS/configs"
  echo "(import \"$PWD/training_config/glue/$2.jsonnet\") + { settings+:: { encoder: \"${ENCODER[$1]}\" } }" > "$config"
  local pin=(env OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 MAELMO_LM_ARCHIVE=${ARCHIVE[$1]}
             taskset -c "${MAELMO_CORE:-0}" .venv/bin/allennlp)
  "${pin[@]}" train "$config" -s "$out" -f --include-package maelmo_plugin \
    --file-friendly-logging -o "{$REDUCED}" > "$out.log" 2>&1
  "${pin[@]}" evaluate "$out/model.tar.gz" "$MAELMO_GLUE_DIR/${DEV[$2]}/dev.tsv" --include-package maelmo_plugin \
    --output-file "$out/dev_metrics.json" >> "$out.log" 2>&1
}

for encoder in ${@:-maelmo elmo random}; do
  for task in $TASKS; do run "$encoder" "$task"; done
done
.venv/bin/python scripts/summarize_glue.py "$RUNS"
