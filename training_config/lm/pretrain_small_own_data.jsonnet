// pretrain_small.jsonnet on your corpus and vocabulary (for example WikiText-2 with bert-base-cased's):
//
//   MAELMO_TRAIN_PATH=wikitext-2/train.txt MAELMO_VALIDATION_PATH=wikitext-2/valid.txt \
//   MAELMO_VOCAB=bert-base-cased-vocab.txt \
//   allennlp train training_config/lm/pretrain_small_own_data.jsonnet -s runs/small --include-package maelmo_plugin
//
// It builds (from pretrain_common.libsonnet's `masked_elmo`; `allennlp maelmo-config` prints it expanded):
//   vocabulary       maelmo_wordpiece     maelmo_plugin/common/wordpiece.py
//   dataset_reader   maelmo_mlm_corpus    maelmo_plugin/lm/dataset_readers/mlm_corpus.py
//   data_loader      maelmo_btbptt        maelmo_plugin/lm/data_loaders/btbptt.py
//   model            maelmo_masked_elmo_lm     maelmo_plugin/lm/models/masked_elmo_lm.py
//   encoder          maelmo_masked_elmo   maelmo_plugin/lm/modules/masked_elmo_encoder.py
//   callback         maelmo_throughput    maelmo_plugin/training/throughput_callback.py
//   callback         maelmo_exact_resume  maelmo_plugin/training/exact_resume.py
//   checkpointer     maelmo_atomic        maelmo_plugin/training/atomic_checkpointer.py
local lm = import "pretrain_common.libsonnet";

(import "pretrain_small.jsonnet") + {
  data:: lm.user_data,  // MAELMO_TRAIN_PATH, MAELMO_VALIDATION_PATH, MAELMO_VOCAB
}
