// Masked ELMo pre-training at the paper's size (Senay & Salin, 2020, sections 2-3.3): word-piece embeddings
// d=768, 2 biLSTM layers of 4096 cells projected to 384 per direction (about 104M parameters with the
// 28,996-entry bert-base-cased vocabulary), 128-token windows, Adam lr 1e-3 decayed by 0.95 per epoch,
// 10 epochs, 4 mask accumulations. The paper reaches a holdout masked perplexity of 5.45 after 7.8 days on
// 4 GPUs (Wikipedia + BookCorpus subset, about the size of the 1B word benchmark).
//
//   MAELMO_TRAIN_PATH=corpus/train/*.txt MAELMO_VALIDATION_PATH=corpus/holdout.txt \
//   MAELMO_VOCAB=bert-base-cased-vocab.txt \
//   allennlp train training_config/pretrain.jsonnet -s runs/pretrain --include-package maelmo_plugin
//
// Not stated by the paper, chosen here: dropout 0.1 (ELMo's), gradient-norm clipping at 5, batch size 64
// per GPU. Several GPUs or machines: torchrun (docs/distributed.md), or a "distributed" block, with
// "ddp_accelerator": {"type": "maelmo_ddp"} for sequential mask accumulation (one all-reduce per update).
//
// It builds (from lm/pretrain_common.libsonnet's `masked_elmo`; `allennlp maelmo-config` prints it expanded):
//   vocabulary       maelmo_wordpiece     maelmo_plugin/common/wordpiece.py
//   dataset_reader   maelmo_mlm_corpus    maelmo_plugin/lm/dataset_readers/mlm_corpus.py
//   data_loader      maelmo_btbptt        maelmo_plugin/lm/data_loaders/btbptt.py
//   model            maelmo_masked_elmo_lm     maelmo_plugin/lm/models/masked_elmo_lm.py
//   encoder          maelmo_masked_elmo   maelmo_plugin/lm/modules/masked_elmo_encoder.py
//   callback         maelmo_throughput    maelmo_plugin/training/throughput_callback.py
//   callback         maelmo_exact_resume  maelmo_plugin/training/exact_resume.py
//   checkpointer     maelmo_atomic        maelmo_plugin/training/atomic_checkpointer.py
local lm = import "lm/pretrain_common.libsonnet";

lm.masked_elmo + {
  sizes:: {
    dim: 768,
    cells: 4096,
    layers: 2,
    sequence_length: 128,
    batch_size: 64,
    epochs: 10,
    num_mask_sets: 4,
    dropout: 0.1,
  },
  data:: lm.user_data,  // MAELMO_TRAIN_PATH, MAELMO_VALIDATION_PATH, MAELMO_VOCAB
  settings:: {
    seed: 13370,
    cuda_device: 0,  // a GPU, with AMP
    mask_accumulation: "batched",  // "sequential": k passes per batch, a quarter of the activation memory
    checkpoint_seconds: 900,  // the most a crash costs
    deterministic: false,  // true: bit-identical GPU runs, at some cost in speed
    cuda_graphs: false,  // true: each layer's LSTM replayed from a CUDA graph (docs/performance.md#pre-training-on-a-gpu); off until its gpu tests have run on a GPU
  },
}
