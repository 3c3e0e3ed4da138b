// A CPU-size BERT*: the procedure of pretrain_bert.jsonnet at about the parameter count of the small Masked
// ELMo's encoder (pretrain_small.jsonnet: 1.72M; here 8 layers of 128, 2 heads, feed-forward 512: 1.65M),
// with its windows, batches and epochs, on the sample corpus shipped with the package. Warm-up: the first
// 10% of the updates or so (BERT's 10,000 of 1M is 1%; a short run needs relatively more).
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
    dim: 128,
    layers: 8,
    heads: 2,
    intermediate: 512,
    sequence_length: 64,
    batch_size: 32,
    epochs: 10,
    num_mask_sets: 1,
    dropout: 0.1,
    layer_norm: "post",  // BERT's blocks
    lr: 5e-4,  // ELECTRA-small's rate: small transformers train at higher rates than BERT-base's 1e-4
    warmup_steps: 30,
  },
  data:: lm.sample_data,  // the sample corpus in sample/, beside this file
  settings:: {
    seed: 13370,
    cuda_device: -1,  // CPU
    mask_accumulation: "batched",  // the k masked copies of a batch in one pass (k = sizes.num_mask_sets)
    checkpoint_seconds: 900,  // the most a crash costs
    deterministic: false,  // CPU runs are reproducible anyway
  },
}
