// Continued pre-training: a trained Masked ELMo (or ELMo, BERT*) archive, pre-trained further on your own
// text, gives a language model of your domain (docs/continued_pretraining.md). The archive brings the model:
// its architecture, weights, vocabulary and masking. This file brings the data, the windows and a learning-rate
// schedule of its own: a fresh Adam (the archive holds no optimizer state) at a tenth of pre-training's rate,
// with a short warm-up while its moments settle and a linear decay, so that the updates adapt the model rather than undo it.
//
//   MAELMO_LM_ARCHIVE=runs/sample/model.tar.gz MAELMO_VOCAB=<the archive's vocab.txt> \
//   MAELMO_TRAIN_PATH='domain/train/*.txt' MAELMO_VALIDATION_PATH=domain/holdout.txt \
//     allennlp train training_config/lm/continue.jsonnet -s runs/continued --include-package maelmo_plugin
//
// It builds (from pretrain_common.libsonnet's `masked_elmo`, the model replaced; `allennlp maelmo-config`
// prints it expanded):
//   vocabulary       maelmo_wordpiece     maelmo_plugin/common/wordpiece.py
//   dataset_reader   maelmo_mlm_corpus    maelmo_plugin/lm/dataset_readers/mlm_corpus.py
//   data_loader      maelmo_btbptt        maelmo_plugin/lm/data_loaders/btbptt.py
//   model            maelmo_pretrained_lm  maelmo_plugin/lm/models/pretrained_lm.py
//   callback         maelmo_throughput    maelmo_plugin/training/throughput_callback.py
//   callback         maelmo_exact_resume  maelmo_plugin/training/exact_resume.py
//   checkpointer     maelmo_atomic        maelmo_plugin/training/atomic_checkpointer.py
local lm = import "pretrain_common.libsonnet";

lm.masked_elmo + {
  sizes:: {
    sequence_length: 64,  // the windows; the paper's configs use 128 (pretrain.jsonnet)
    batch_size: 32,
    epochs: 5,
    num_mask_sets: 1,  // batched: the model's own num_mask_sets (from the archive) applies
    warmup_updates: 100,
  },
  data:: lm.user_data + { archive: std.extVar("MAELMO_LM_ARCHIVE") },
  settings:: {
    seed: 13370,
    cuda_device: -1,  // -1: CPU; 0: a GPU, with AMP
    mask_accumulation: "batched",
    checkpoint_seconds: 900,  // the most a crash costs
    deterministic: false,
  },
  model: {
    type: "maelmo_pretrained_lm",
    archive_file: $.data.archive,  // copied into maelmo_assets/: the new archive loads without it
  },
  trainer+: {
    optimizer: { type: "adam", lr: 1e-4 },  // a tenth of pre-training's 1e-3
    // Warm-up while the fresh Adam's moments settle, then a linear decay to 0 at the last update (BERT's).
    learning_rate_scheduler: { type: "linear_with_warmup", warmup_steps: $.sizes.warmup_updates },
  },
}
