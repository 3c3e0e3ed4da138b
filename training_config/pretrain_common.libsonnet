// Shared pieces of the Masked ELMo pre-training configs (Senay & Salin, 2020, section 3.3).
// Every path and the device come from environment variables; maelmo_plugin/env_defaults.py gives each a
// default (the embedded sample corpus, CPU), and any of them can be set by the user or overridden with -o.
local cuda_device = std.parseInt(std.extVar("MAELMO_CUDA_DEVICE"));

{
  // sizes: {dim, cells, layers, sequence_length, batch_size, epochs, mask_sets, dropout}
  pretrain(sizes):: {
    vocabulary: {
      // Straight from the word-piece vocab.txt (or hub name): no pass over the corpus.
      type: "maelmo_wordpiece",
      vocab: std.extVar("MAELMO_VOCAB"),
    },
    dataset_reader: {
      type: "maelmo_mlm_corpus",
      tokenizer: { type: "maelmo_wordpiece", vocab: std.extVar("MAELMO_VOCAB") },
      sequence_length: sizes.sequence_length,
      shuffle_documents: true,  // document-level shuffling (paper 3.3)
      seed: std.parseInt(std.extVar("MAELMO_SEED")),
      [if std.objectHas(sizes, "document_start_pattern") then "document_start_pattern"]: sizes.document_start_pattern,
    },
    train_data_path: std.extVar("MAELMO_TRAIN_PATH"),
    validation_data_path: std.extVar("MAELMO_VALIDATION_PATH"),
    model: {
      type: "maelmo_masked_lm",
      encoder: {
        input_dim: sizes.dim,
        cells: sizes.cells,
        num_layers: sizes.layers,
        dropout: sizes.dropout,
      },
      num_mask_sets: sizes.mask_sets,
      seed: std.parseInt(std.extVar("MAELMO_SEED")),
    },
    data_loader: {
      batch_size: sizes.batch_size,
      shuffle: true,
      // Streams the corpus: only this many windows are in memory at once (shuffled among themselves).
      max_instances_in_memory: sizes.batch_size * 200,
    },
    validation_data_loader: { batch_size: sizes.batch_size, shuffle: false },
    trainer: {
      num_epochs: sizes.epochs,
      cuda_device: cuda_device,
      // AMP only where it exists: AllenNLP refuses use_amp on CPU.
      use_amp: cuda_device >= 0 && std.extVar("MAELMO_USE_AMP") == "1",
      optimizer: { type: "adam", lr: 1e-3 },  // paper: Adam, learning rate 0.001 ...
      learning_rate_scheduler: { type: "exponential", gamma: 0.95 },  // ... with a decay of 0.95 per epoch
      grad_norm: 5.0,  // not in the paper: clipping is standard for LSTM LMs and harmless when unneeded
      validation_metric: "-perplexity",
      checkpointer: {
        keep_most_recent_by_count: 2,
        [if std.objectHas(sizes, "checkpoint_every_seconds") then "save_every_num_seconds"]: sizes.checkpoint_every_seconds,
      },
      callbacks: [{ type: "tensorboard" }],
    },
  },
}
