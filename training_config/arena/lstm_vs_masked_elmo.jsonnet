// An arena (`maelmo maelmo-arena`, docs/encoders.md#the-arena): AllenNLP's own `lstm` against Masked ELMo's
// encoder, both in the small pre-training config (lm/pretrain_small.jsonnet) and parameter-matched, each at the
// learning rate its own sweep chooses, on 3 paired seeds, each seed fine-tuned on SST-2 beside its untrained
// architecture. Besides the configs it reads, it names:
//   encoder          maelmo_masked_elmo   maelmo_plugin/lm/modules/masked_elmo_encoder.py
//
//   MAELMO_TRAIN_PATH=... MAELMO_VALIDATION_PATH=... MAELMO_VOCAB=... MAELMO_GLUE_DIR=... \
//     maelmo maelmo-arena training_config/arena/lstm_vs_masked_elmo.jsonnet -s runs/arena
//
// Paths come from the environment, as in the other configs on a user's data; relative ones are read from the
// working directory, as a training config's.
{
  arms: {
    // Masked ELMo's encoder with 120 cells: the small config's 512 would give it 4 times the lstm's encoder.
    masked_elmo: {
      config: "lm/pretrain_small",
      encoder: { type: "maelmo_masked_elmo", input_dim: 128, cells: 120, num_layers: 2, dropout: 0.1 },
      rates: [1e-3, 2e-3, 4e-3],  // around the config's own 1e-3, by factors of 2
    },
    // 4 bidirectional layers of 64 per direction: the embedding's 128 out, as the tied softmax needs, and an
    // encoder within 10% of the other's parameters.
    lstm: {
      config: "lm/pretrain_small",
      encoder: { type: "lstm", input_size: 128, hidden_size: 64, num_layers: 4, bidirectional: true },
      rates: [3e-3, 1e-2, 3e-2],  // around pretrain_small's measured 1e-2 for lstm
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
  parameter_tolerance: 0.1,
}
