// The ELMo baseline of Masked ELMo's Table 4 (Senay & Salin, 2020, section 6.1): ELMo's biLM (Peters et al.,
// 2018, sections 3 and 3.4) trained on the same corpus and word-pieces as ../pretrain.jsonnet. From ELMo and
// its training code (allenai/bilm-tf, bin/train_elmo.py): 2 layers of 4096 cells projected to 512, residual
// connection from layer 1 to 2, ELMo's clipping cell (cell and projection clipped at 3), one softmax shared
// by the two directions, dropout 0.1, 20-token windows with states carried between batches, batch size 128
// (per GPU; ELMo used 3 GPUs), Adagrad at 0.2 (initial accumulator 1.0) and gradient-norm clipping at 10
// on a loss summed over the window (expressed for our mean loss in pretrain_common.libsonnet), 10 epochs.
// About 90.5M parameters with the 28,996-entry bert-base-cased vocabulary (ELMo's 93.6M had a char CNN).
//
//   MAELMO_TRAIN_PATH=corpus/train/*.txt MAELMO_VALIDATION_PATH=corpus/holdout.txt \
//   MAELMO_VOCAB=bert-base-cased-vocab.txt \
//   allennlp train training_config/lm/pretrain_elmo.jsonnet -s runs/pretrain_elmo --include-package maelmo_plugin
//
// What differs from ELMo:
// * word-piece embeddings of size 512 (the token layer) instead of the character CNN with highway layers
//   and a projection to 512; the softmax is tied to that embedding (bilm-tf's share_embedding_softmax);
// * the full softmax instead of a sampled one (8,192 negatives): affordable at 29k word-pieces;
// * windows of 20 word-pieces rather than 20 words, cut from document-shuffled paragraphs rather than
//   the 1B Word Benchmark's shuffled sentences;
// * the backward direction starts every window from zero states (bilm-tf feeds it its own reversed
//   stream, so its state can be carried; here both directions read the same window);
// * dropout only on the first layer's input and the top layer's output (bilm-tf: every layer's input).
// The fused cell (cell: "fused") is the Masked ELMo paper's 20% faster variant (section 2.2).
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
    projection: 512,
    cells: 4096,
    layers: 2,
    sequence_length: 20,
    batch_size: 128,
    epochs: 10,
    dropout: 0.1,
    cell: "elmo",
    optimizer: "adagrad",  // bilm-tf's, at its rate
    lr: 0.2,
    stateful: true,  // ELMo's carried states (pretrain_common.libsonnet)
  },
  data:: lm.user_data,  // MAELMO_TRAIN_PATH, MAELMO_VALIDATION_PATH, MAELMO_VOCAB
  settings:: {
    seed: 13370,
    cuda_device: 0,  // a GPU, with AMP
    checkpoint_seconds: 900,  // the most a crash costs
    deterministic: false,  // true: bit-identical GPU runs, at some cost in speed
  },
}
