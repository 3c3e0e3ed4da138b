// BERT* at the paper's size (Senay & Salin, 2020, Tables 2-3: "a BERT baseline trained on the same corpus
// and a same 128 token context size as Masked ELMo"): BERT-base (12 layers of 768, 12 heads, feed-forward
// 3072; about 108M parameters with the 28,996-entry bert-base-cased vocabulary, against Masked ELMo's 104M),
// trained as ../pretrain.jsonnet trains Masked ELMo: the same data, windows, batches, masks, k=4 mask
// accumulation and 10 epochs. The paper reports 2 more days than Masked ELMo's 7.8 on 4 GPUs.
//
//   MAELMO_TRAIN_PATH=corpus/train/*.txt MAELMO_VALIDATION_PATH=corpus/holdout.txt \
//   MAELMO_VOCAB=bert-base-cased-vocab.txt \
//   allennlp train training_config/lm/pretrain_bert.jsonnet -s runs/pretrain_bert --include-package maelmo_plugin
//
// Not stated by the paper, chosen here: BERT's own optimizer (AdamW at 1e-4, 10,000 warm-up steps, linear
// decay, weight decay 0.01, clipping at 1), dropout 0.1, no next-sentence objective.
//
// It builds (from pretrain_common.libsonnet's `bert`; `allennlp maelmo-config` prints it expanded):
//   vocabulary       maelmo_wordpiece     maelmo_plugin/common/wordpiece.py
//   dataset_reader   maelmo_mlm_corpus    maelmo_plugin/lm/dataset_readers/mlm_corpus.py
//   data_loader      maelmo_btbptt        maelmo_plugin/lm/data_loaders/btbptt.py
//   model            maelmo_masked_elmo_lm     maelmo_plugin/lm/models/masked_elmo_lm.py
//   encoder          maelmo_transformer   maelmo_plugin/lm/modules/transformer_encoder.py
//   callback         maelmo_throughput    maelmo_plugin/training/throughput_callback.py
//   callback         maelmo_exact_resume  maelmo_plugin/training/exact_resume.py
//   checkpointer     maelmo_atomic        maelmo_plugin/training/atomic_checkpointer.py
local lm = import "pretrain_common.libsonnet";

lm.bert + {
  sizes:: {
    dim: 768,
    layers: 12,
    heads: 12,
    intermediate: 3072,
    sequence_length: 128,
    batch_size: 64,
    epochs: 10,
    num_mask_sets: 4,
    dropout: 0.1,
    lr: 1e-4,
    warmup_steps: 10000,
    layer_norm: "post",  // BERT's blocks
  },
  data:: lm.user_data,  // MAELMO_TRAIN_PATH, MAELMO_VALIDATION_PATH, MAELMO_VOCAB
  settings:: {
    seed: 13370,
    cuda_device: 0,  // a GPU, with AMP
    mask_accumulation: "batched",  // "sequential": k passes per batch, a quarter of the activation memory
    checkpoint_seconds: 900,  // the most a crash costs
    deterministic: false,  // true: bit-identical GPU runs, at some cost in speed
  },
}
