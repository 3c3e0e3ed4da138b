// A CPU-size ELMo biLM: the same code and procedure as pretrain_elmo.jsonnet (ELMo, Peters et al., 2018, as
// the baseline of Masked ELMo's Table 4), parameter-matched to pretrain_small.jsonnet so that the two compare
// fairly: the same 128-d word-piece embedding (ELMo's projection is its embedding size), and 368 cells per
// direction and layer, which puts its encoder at 1.71M parameters against the small Masked ELMo's 1.72M
// (ELMo's two directions each read the whole 128-d layer below, Masked ELMo's project to 64; the tied
// embedding and softmax bias are the same; tests/lm/parameter_matching_test.py checks the 5%). 64-token
// windows as the small Masked ELMo (ELMo's 20 would waste the corpus's long-range context), and the fused
// cell (no clipping, and faster than ELMo's cell on a CPU; docs/performance.md).
//
// It builds (from pretrain_common.libsonnet's `elmo`; `allennlp maelmo-config` prints it expanded):
//   vocabulary       maelmo_wordpiece     maelmo_plugin/common/wordpiece.py
//   dataset_reader   maelmo_mlm_corpus    maelmo_plugin/lm/dataset_readers/mlm_corpus.py
//   data_loader      maelmo_btbptt        maelmo_plugin/lm/data_loaders/btbptt.py
//   model            maelmo_elmo_lm       maelmo_plugin/lm/models/elmo_lm.py
//   encoder          maelmo_elmo_bilm     maelmo_plugin/lm/modules/elmo_bilm_encoder.py
//   callback         maelmo_throughput    maelmo_plugin/training/throughput_callback.py
//   callback         maelmo_exact_resume  maelmo_plugin/training/exact_resume.py
//   checkpointer     maelmo_atomic        maelmo_plugin/training/atomic_checkpointer.py
local lm = import "pretrain_common.libsonnet";

lm.elmo + {
  sizes:: {
    projection: 128,
    cells: 368,
    layers: 2,
    sequence_length: 64,
    batch_size: 32,
    epochs: 10,
    dropout: 0.1,
    cell: "fused",
    optimizer: "adagrad",  // bilm-tf's, at its rate; "adam" is Masked ELMo's (pretrain_common.libsonnet)
    lr: 0.2,
    stateful: true,  // ELMo's carried states; the arena sets false (pretrain_common.libsonnet says why)
  },
  data:: lm.sample_data,  // the sample corpus in sample/, beside this file
  settings:: {
    seed: 13370,
    cuda_device: -1,  // CPU
    checkpoint_seconds: 900,  // the most a crash costs
    deterministic: false,  // CPU runs are reproducible anyway
  },
}
