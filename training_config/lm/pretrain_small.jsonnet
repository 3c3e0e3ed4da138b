// A CPU-size Masked ELMo: the same code and procedure as ../pretrain.jsonnet, with smaller sizes, so that it
// trains in a few minutes on the sample corpus shipped with the package (the README's Quickstart). On your
// own corpus: pretrain_small_own_data.jsonnet. Figures it reached: docs/results.md.
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

lm.masked_elmo + {
  sizes:: {
    dim: 128,
    cells: 512,
    layers: 2,
    sequence_length: 64,
    batch_size: 32,
    epochs: 10,
    num_mask_sets: 1,
    dropout: 0.1,
  },
  data:: lm.sample_data,  // the sample corpus in sample/, beside this file
  // The rate each encoder learns at here, by its "type", for a config that swaps model.encoder: the
  // reproduction's choice among 1e-4 to 3e-2 on the sample corpus (benchmarks/encoder_learning_rates.py; its
  // record: lstm 72.2 and gru 51.7 at 1e-2, where Masked ELMo's 1e-3 left them near the unigram floor; Masked
  // ELMo 81.5 at its own 1e-3). pytorch_transformer learned at none of them in these 10 epochs, so it has none:
  // it keeps 1e-3, with a warning.
  encoder_learning_rates:: { maelmo_masked_elmo: 1e-3, lstm: 1e-2, gru: 1e-2 },
  settings:: {
    seed: 13370,
    cuda_device: -1,  // CPU
    mask_accumulation: "batched",  // the k masked copies of a batch in one pass (k = sizes.num_mask_sets)
    checkpoint_seconds: 900,  // the most a crash costs
    deterministic: false,  // CPU runs are reproducible anyway
    cuda_graphs: false,  // true: each layer's LSTM replayed from a CUDA graph (docs/performance.md#pre-training-on-a-gpu); off until its gpu tests have run on a GPU
  },
}
