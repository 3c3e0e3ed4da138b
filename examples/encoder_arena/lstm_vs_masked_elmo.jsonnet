// An arena (`maelmo maelmo-arena`, docs/encoders.md#the-arena): AllenNLP's own `lstm` against Masked ELMo's
// encoder (`maelmo_masked_elmo`), both in the small pre-training config (lm/pretrain_small.jsonnet) with the same
// word-piece embedding, each at the learning rate its own sweep chooses, on 3 paired seeds, each seed fine-tuned
// on SST-2 beside its untrained architecture. The table it gave, and its sweeps, are in results/.
//
//   MAELMO_TRAIN_PATH=... MAELMO_VALIDATION_PATH=... MAELMO_VOCAB=... MAELMO_GLUE_DIR=... \
//     maelmo maelmo-arena examples/encoder_arena/lstm_vs_masked_elmo.jsonnet -s runs/arena
//
// Paths come from the environment, as in the other configs on a user's data; relative ones are read from the
// working directory, as a training config's.
{
  arms: {
    // Masked ELMo's encoder at its smallest for this width (65 cells, more than its projection of 64): 10% more
    // encoder parameters than the lstm's (the small config's 512 cells would have 8 times as many).
    masked_elmo: {
      config: "lm/pretrain_small",
      encoder: { type: "maelmo_masked_elmo", input_dim: 128, cells: 65, num_layers: 2, dropout: 0.1 },
      rates: [2e-3, 4e-3, 8e-3, 1.6e-2],  // 1.6e-2 added when 8e-3 was chosen at the edge
    },
    // 2 bidirectional layers of 64 per direction: the embedding's 128 out, as the tied softmax needs.
    lstm: {
      config: "lm/pretrain_small",
      encoder: { type: "lstm", input_size: 128, hidden_size: 64, num_layers: 2, bidirectional: true },
      rates: [1e-3, 3e-3, 1e-2, 3e-2, 1e-1],  // around pretrain_small's 1e-2 for lstm, widened at each edge the arena named
    },
  },
  corpus: {
    train: std.extVar("MAELMO_TRAIN_PATH"),
    validation: std.extVar("MAELMO_VALIDATION_PATH"),
    vocab: std.extVar("MAELMO_VOCAB"),
  },
  epochs: 3,
  seeds: [1, 2, 3],
  // The reduced CPU protocol (docs/design.md): 6 of Table 1's validation intervals, a task BiLSTM of 256.
  glue: { directory: std.extVar("MAELMO_GLUE_DIR"), tasks: ["sst2"], modes: ["ft"], validations: 6, head_hidden: 256 },
  parameter_tolerance: 0.15,  // the encoders part by 10.2%; the whole models (the tied embedding too) by 0.5%
}
