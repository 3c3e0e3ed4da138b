// pretrain_small.jsonnet on your corpus and vocabulary (for example WikiText-2 with bert-base-cased's):
//
//   MAELMO_TRAIN_PATH=wikitext-2/train.txt MAELMO_VALIDATION_PATH=wikitext-2/valid.txt \
//   MAELMO_VOCAB=bert-base-cased-vocab.txt \
//   allennlp train training_config/lm/pretrain_small_own_data.jsonnet -s runs/small --include-package maelmo_plugin
local lm = import "pretrain_common.libsonnet";

(import "pretrain_small.jsonnet") + {
  data:: lm.user_data,  // MAELMO_TRAIN_PATH, MAELMO_VALIDATION_PATH, MAELMO_VOCAB
}
