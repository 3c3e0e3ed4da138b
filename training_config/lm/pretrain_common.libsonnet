// Shared pieces of the Masked ELMo pre-training configs (Senay & Salin, 2020, section 3.3).
// Every path and the device come from environment variables; maelmo_plugin/env_defaults.py gives each a
// default (the embedded sample corpus, CPU), and any of them can be set by the user or overridden with -o.
local cuda_device = std.parseInt(std.extVar("MAELMO_CUDA_DEVICE"));
local checkpointing = import "../common/checkpointing.libsonnet";

// A paper-size config trained on the embedded sample (the variables' default) would run for days on 2,000
// word-pieces without a word: such configs set own_data and stop here instead.
local sample = "maelmo_plugin/lm/sample/";
local own(name, sizes) =
  local value = std.extVar(name);
  if std.objectHas(sizes, "own_data") && sizes.own_data && std.length(std.findSubstr(sample, value)) > 0 then
    error "This paper-size config needs your corpus and vocabulary: set MAELMO_TRAIN_PATH, "
      + "MAELMO_VALIDATION_PATH and MAELMO_VOCAB (" + name + " is the embedded sample, " + value
      + ", which is for pretrain_small.jsonnet). The config's header shows the command."
  else value;

{
  // sizes: {dim, cells, layers, sequence_length, batch_size, epochs, mask_sets, dropout}, and optionally
  // btbptt (false: plain TBPTT), document_start_pattern, own_data (true: refuse the embedded sample).
  pretrain(sizes):: {
    // One switch sets the model, the loader and the trainer together (an -o on one of them would not).
    local mask_accumulation = std.extVar("MAELMO_MASK_ACCUMULATION"),
    local sequential = mask_accumulation == "sequential",
    // k: the config's own value unless MAELMO_MASK_SETS is set (again one switch for model, loader, trainer).
    local mask_sets = if std.extVar("MAELMO_MASK_SETS") == "" then sizes.mask_sets else std.parseInt(std.extVar("MAELMO_MASK_SETS")),
    local btbptt = if std.objectHas(sizes, "btbptt") then sizes.btbptt else true,
    vocabulary: {
      // Straight from the word-piece vocab.txt (or hub name): no pass over the corpus.
      type: "maelmo_wordpiece",
      vocab: own("MAELMO_VOCAB", sizes),
    },
    // The reader turns text into word-piece ids; the data loaders decide the order, the windows and the workers.
    dataset_reader: {
      type: "maelmo_mlm_corpus",
      tokenizer: { type: "maelmo_wordpiece", vocab: own("MAELMO_VOCAB", sizes) },
      [if std.objectHas(sizes, "document_start_pattern") then "document_start_pattern"]: sizes.document_start_pattern,
    },
    train_data_path: own("MAELMO_TRAIN_PATH", sizes),
    validation_data_path: own("MAELMO_VALIDATION_PATH", sizes),
    // model.tar.gz also holds the tokenizer (maelmo_assets/), so it loads where the vocabulary file is gone,
    // and the run's metrics and speed, which `allennlp maelmo-export` writes into the model card.
    include_in_archive: ["maelmo_assets", "metrics.json", "throughput.json"],
    model: {
      type: "maelmo_masked_lm",
      encoder: {
        input_dim: sizes.dim,
        cells: sizes.cells,
        num_layers: sizes.layers,
        dropout: sizes.dropout,
      },
      num_mask_sets: mask_sets,  // mask accumulation, paper 3.1
      mask_accumulation: mask_accumulation,
      seed: std.parseInt(std.extVar("MAELMO_SEED")),
    },
    data_loader: {
      // Stateful training over contiguous rows; odd rows visit their windows right to left (paper 3.2).
      type: "maelmo_btbptt",
      batch_size: sizes.batch_size,
      sequence_length: sizes.sequence_length,
      shuffle: true,  // document-level shuffling (paper 3.3), a new order every epoch
      seed: std.parseInt(std.extVar("MAELMO_SEED")),
      stateful: true,
      bidirectional: btbptt,
      mask_accumulation_passes: if sequential then mask_sets else 1,
    },
    // Validation: the same windows and masks every pass, each window from zero states (comparable across
    // epochs and batch sizes).
    validation_data_loader: {
      type: "maelmo_btbptt",
      batch_size: sizes.batch_size,
      sequence_length: sizes.sequence_length,
      shuffle: false,
      stateful: false,
    },
    trainer: {
      num_epochs: sizes.epochs,
      // Sequential mask accumulation: the loader hands each batch k times, the trainer averages them.
      num_gradient_accumulation_steps: if sequential then mask_sets else 1,
      cuda_device: cuda_device,
      // AMP only where it exists: AllenNLP refuses use_amp on CPU.
      use_amp: cuda_device >= 0 && std.extVar("MAELMO_USE_AMP") == "1",
      optimizer: { type: "adam", lr: 1e-3 },  // paper: Adam, learning rate 0.001 ...
      learning_rate_scheduler: { type: "exponential", gamma: 0.95 },  // ... with a decay of 0.95 per epoch
      grad_norm: 5.0,  // not in the paper: clipping is standard for LSTM LMs and harmless when unneeded
      validation_metric: "-perplexity",
      checkpointer: checkpointing.checkpointer(2),
      callbacks: [{ type: "tensorboard" }, { type: "maelmo_throughput" }, { type: "maelmo_exact_resume" }],
    },
  },
  // The ELMo biLM baseline (Peters et al., 2018; Masked ELMo's Table 4) on the same word-piece pipeline:
  // pretrain() with ELMo's model, a stateful loader and bilm-tf's optimizer in place of Masked ELMo's.
  // sizes: {projection, cells, layers, sequence_length, batch_size, epochs, dropout, cell}
  elmo_pretrain(sizes):: self.pretrain(sizes + { dim: sizes.projection, mask_sets: 1 }) + {
    model: {
      type: "maelmo_elmo_lm",
      encoder: {
        input_dim: sizes.projection,
        cells: sizes.cells,
        num_layers: sizes.layers,
        dropout: sizes.dropout,
        cell: sizes.cell,
      },
      dropout: sizes.dropout,  // bilm-tf also drops out the top layer's output before the softmax
    },
    // Stateful TBPTT, as ELMo trains: every row of a batch continues the stream of the same row of the
    // previous batch. Plain TBPTT (not BTBPTT): the model carries only the forward direction's states,
    // which are right only when the previous batch held the window to the left (see maelmo_elmo_lm).
    data_loader+: { bidirectional: false },
    // bilm-tf: Adagrad at 0.2 with an initial accumulator of 1.0, constant rate, global gradient-norm
    // clipping at 10, on the loss multiplied by the number of unrolled steps k (the sum over a window's
    // positions). With our per-position mean loss, the same updates come from dividing the initial
    // accumulator by k^2 and the clipping norm by k (Adagrad's step lr g / sqrt(a0 + sum g^2) is unchanged
    // when g -> k g and a0 -> k^2 a0).
    local k = sizes.sequence_length,
    trainer+: {
      optimizer: { type: "adagrad", lr: 0.2, initial_accumulator_value: 1.0 / (k * k) },
      learning_rate_scheduler:: null,
      grad_norm: 10.0 / k,
      num_gradient_accumulation_steps: 1,  // nothing is masked: MAELMO_MASK_* do not apply
    },
  },
}
