// What the pre-training configs share (Masked ELMo, Senay & Salin, 2020, section 3.3). A config is
// `masked_elmo` (or `elmo`) plus three hidden fields that it spells out:
//
//   sizes::    {dim, cells, layers, sequence_length, batch_size, epochs, num_mask_sets, dropout}, and optionally
//              btbptt (false: plain TBPTT) and document_start_pattern
//   data::     {train, validation, vocab}: corpus paths (globs and token stores allowed) and the word-piece
//              vocabulary (a vocab.txt, a tokenizer directory or a hub name)
//   settings:: {seed, cuda_device, mask_accumulation, checkpoint_seconds, deterministic}, and for Masked ELMo
//              cuda_graphs
//
// Each setting is one value that sets every place it touches: the seed feeds AllenNLP's three seeds, the
// masks and the document order; AMP is on exactly when cuda_device is a GPU; mask_accumulation sets the
// model, the loader and the trainer together. Change them with a variant file, which AllenNLP's -o
// (applied after Jsonnet) cannot do:
//
//   (import "pretrain_small.jsonnet") + { settings+:: { seed: 1, cuda_device: 0 } }
local checkpointing = import "../common/checkpointing.libsonnet";

// This file's folder, as Jsonnet was given it (relative to the working directory, or absolute): the sample
// corpus lies in sample/ beside it, in a checkout and in an installed package alike, so that the small configs
// run from any directory.
local parts = std.split(std.thisFile, "/");
local here = if std.length(parts) == 1 then "." else std.join("/", parts[:std.length(parts) - 1]);

{
  // The sample corpus (sample/README.md): an excerpt of the Python Language Reference, with its vocabulary.
  sample_data:: {
    train: here + "/sample/train.txt",
    validation: here + "/sample/valid.txt",
    vocab: here + "/sample/vocab.txt",
  },

  // The data of a config that trains on the user's corpus: every path from the environment, no default.
  user_data:: {
    train: std.extVar("MAELMO_TRAIN_PATH"),
    validation: std.extVar("MAELMO_VALIDATION_PATH"),
    vocab: std.extVar("MAELMO_VOCAB"),
  },

  masked_elmo:: {
    local config = self,
    local sizes = config.sizes,
    local settings = config.settings,
    local sequential = settings.mask_accumulation == "sequential",
    local num_mask_sets = sizes.num_mask_sets,

    sizes:: error "a pre-training config sets sizes::",
    data:: error "a pre-training config sets data::",
    settings:: error "a pre-training config sets settings::",

    // A config may swap model.encoder for another type (`model+: { encoder: {...} }`, docs/encoders.md); then
    // what follows is said aloud rather than silently dropped or kept.
    // * The learning rate each encoder type trains at, by its "type": a swapped encoder takes its own, where the
    //   config measured one (pretrain_small.jsonnet: benchmarks/encoder_learning_rates.py), and otherwise keeps
    //   Masked ELMo's with a one-line warning. Adam at 0.001 is the paper's.
    encoder_learning_rates:: { maelmo_masked_elmo: 1e-3 },
    // * The settings that only Masked ELMo's own encoder reads: each that a swapped encoder ignores (a size, a
    //   dropout above 0, an option on) is a one-line warning naming it. bert:: has none: its encoder reads its sizes.
    builtin_encoder_settings:: {
      "sizes.cells": sizes.cells,
      "sizes.dropout": sizes.dropout,
      "settings.cuda_graphs": settings.cuda_graphs,
    },
    local encoder_type = config.model.encoder.type,
    local swapped = encoder_type != "maelmo_masked_elmo",
    local ignored = [
      name
      for name in std.objectFields(config.builtin_encoder_settings)
      if swapped && !std.member([false, 0, null], config.builtin_encoder_settings[name])
    ],
    local shown(value) = if std.isNumber(value) then "%g" % value else std.toString(value),
    local said(value) = std.foldl(
      function(result, name) std.trace(
        'model.encoder "%s" ignores %s (%s), which sets Masked ELMo\'s own encoder only: give "%s" its own in model.encoder'
        % [encoder_type, name, shown(config.builtin_encoder_settings[name]), encoder_type],
        result
      ),
      ignored,
      value
    ),
    local rates = config.encoder_learning_rates,
    local learning_rate =
      if std.objectHas(rates, encoder_type) then rates[encoder_type]
      else std.trace(
        'model.encoder "%s" has no learning rate of its own in this config (encoder_learning_rates::): it trains at '
        % encoder_type + "Masked ELMo's %g; measure one (benchmarks/encoder_learning_rates.py) or set trainer.optimizer.lr"
        % rates.maelmo_masked_elmo,
        rates.maelmo_masked_elmo
      ),

    random_seed: settings.seed,
    numpy_seed: settings.seed,
    pytorch_seed: settings.seed,
    vocabulary: {
      // Straight from the word-piece vocab.txt (or hub name): no pass over the corpus.
      type: "maelmo_wordpiece",
      vocab: config.data.vocab,
    },
    // The reader turns text into word-piece ids; the data loaders decide the order, the windows and the workers.
    dataset_reader: {
      type: "maelmo_mlm_corpus",
      tokenizer: { type: "maelmo_wordpiece", vocab: config.data.vocab },
      [if std.objectHas(sizes, "document_start_pattern") then "document_start_pattern"]: sizes.document_start_pattern,
    },
    train_data_path: config.data.train,
    validation_data_path: config.data.validation,
    // model.tar.gz also holds the tokenizer (maelmo_assets/), so it loads where the vocabulary file is gone,
    // and the run's metrics and speed, which `allennlp maelmo-export` writes into the model card.
    include_in_archive: ["maelmo_assets", "metrics.json", "throughput.json"],
    model: {
      assert std.member(["batched", "sequential"], settings.mask_accumulation) :
        'settings.mask_accumulation is "batched" or "sequential", not "' + settings.mask_accumulation + '"',
      type: said("maelmo_masked_elmo_lm"),
      encoder: {
        type: "maelmo_masked_elmo",
        input_dim: sizes.dim,
        cells: sizes.cells,
        num_layers: sizes.layers,
        dropout: sizes.dropout,
        cuda_graphs: settings.cuda_graphs,
      },
      num_mask_sets: num_mask_sets,  // mask accumulation, paper 3.1
      mask_accumulation: settings.mask_accumulation,
      seed: settings.seed,
    },
    data_loader: {
      // Stateful training over contiguous rows; odd rows visit their windows right to left (paper 3.2).
      type: "maelmo_btbptt",
      batch_size: sizes.batch_size,
      sequence_length: sizes.sequence_length,
      shuffle: true,  // document-level shuffling (paper 3.3), a new order every epoch
      seed: settings.seed,
      // A store of more documents is shuffled by at most this many blocks of consecutive documents, so that
      // an epoch's start costs the same at any corpus size.
      max_shuffle_blocks: 65536,
      stateful: true,
      bidirectional: if std.objectHas(sizes, "btbptt") then sizes.btbptt else true,
      // Sequential mask accumulation: the loader hands each batch k times ...
      mask_accumulation_passes: if sequential then num_mask_sets else 1,
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
      // ... and the trainer averages the k passes' gradients.
      num_gradient_accumulation_steps: if sequential then num_mask_sets else 1,
      cuda_device: settings.cuda_device,
      use_amp: settings.cuda_device >= 0,  // AMP wherever there is a GPU (AllenNLP refuses it on CPU)
      optimizer: { type: "adam", lr: learning_rate },  // paper: Adam, learning rate 0.001 (above) ...
      learning_rate_scheduler: { type: "exponential", gamma: 0.95 },  // ... with a decay of 0.95 per epoch
      grad_norm: 5.0,  // not in the paper: clipping is standard for LSTM LMs and harmless when unneeded
      validation_metric: "-perplexity",
      checkpointer: checkpointing.checkpointer(2, settings.checkpoint_seconds),
      callbacks: [{ type: "tensorboard" }, { type: "maelmo_throughput" }, { type: "maelmo_exact_resume" }]
                 + checkpointing.determinism(settings),
    },
  },

  // The ELMo biLM baseline (Peters et al., 2018; Masked ELMo's Table 4) on the same word-piece pipeline:
  // masked_elmo with ELMo's model, a stateful loader, and either bilm-tf's optimizer or Masked ELMo's.
  // sizes:: {projection, cells, layers, sequence_length, batch_size, epochs, dropout, cell, optimizer
  // ("adagrad": bilm-tf's, or "adam": Masked ELMo's), lr, stateful}; settings:: as above without mask_accumulation
  // (nothing is masked).
  elmo:: self.masked_elmo + {
    local config = self,
    local sizes = config.sizes,
    model: {
      type: "maelmo_elmo_lm",
      encoder: {
        type: "maelmo_elmo_bilm",
        input_dim: sizes.projection,
        cells: sizes.cells,
        num_layers: sizes.layers,
        dropout: sizes.dropout,
        cell: sizes.cell,
      },
      dropout: sizes.dropout,  // bilm-tf also drops out the top layer's output before the softmax
      // sizes.stateful true: the forward direction carries its states from batch to batch, as ELMo trains.
      // false: every window starts from zero states in both directions, on the same batches, as the GLUE
      // embedder reads a sentence; a forward LSTM that trains only from carried states is left unconstrained
      // from zero states (docs/reproduction.md, the arena: one seed's zero-state forward perplexity passed
      // 10^14 while it trained at 363), so the arena's biLM trains this way.
      carry_states_in_training: sizes.stateful,
    },
    // Stateful TBPTT batches, as ELMo trains: every row of a batch continues the stream of the same row of
    // the previous batch. Plain TBPTT (not BTBPTT): the model carries only the forward direction's states,
    // which are right only when the previous batch held the window to the left (see maelmo_elmo_lm).
    data_loader+: { bidirectional: false, mask_accumulation_passes: 1 },
    // "adagrad", bilm-tf's: Adagrad (0.2 there) with an initial accumulator of 1.0, constant rate, global
    // gradient-norm clipping at 10, on the loss multiplied by the number of unrolled steps k (the sum over a
    // window's positions). With our per-position mean loss, the same updates come from dividing the initial
    // accumulator by k^2 and the clipping norm by k (Adagrad's step lr g / sqrt(a0 + sum g^2) is unchanged
    // when g -> k g and a0 -> k^2 a0). "adam": Masked ELMo's optimizer, rate decay and clipping (above),
    // so that a comparison of the two LSTMs isolates their objectives; bilm-tf's Adagrad was made for 1B
    // words, and on a CPU budget of a few hundred updates it stays near the word-frequency floor
    // (docs/reproduction.md, the arena's tuning).
    local k = sizes.sequence_length,
    local optimizers = {
      adagrad: {
        optimizer: { type: "adagrad", lr: sizes.lr, initial_accumulator_value: 1.0 / (k * k) },
        learning_rate_scheduler:: null,
        grad_norm: 10.0 / k,
      },
      adam: {
        optimizer: { type: "adam", lr: sizes.lr },
        learning_rate_scheduler: { type: "exponential", gamma: 0.95 },
        grad_norm: 5.0,
      },
    },
    assert std.objectHas(optimizers, sizes.optimizer) :
           "sizes.optimizer must be \"adagrad\" (bilm-tf's) or \"adam\" (Masked ELMo's), got " + sizes.optimizer,
    trainer+: optimizers[sizes.optimizer] + { num_gradient_accumulation_steps: 1 },
  },

  // BERT* of Masked ELMo's Tables 2-3: BERT's encoder trained by this same pipeline (reader, loader rows,
  // keyed masks, mask accumulation, tied softmax, per-token perplexity): the same model, maelmo_masked_elmo_lm,
  // with a maelmo_transformer encoder and BERT's output transform. Only what a
  // transformer needs differs: BERT's optimizer (AdamW, weight decay 0.01 except biases and LayerNorms,
  // linear warm-up then linear decay; the paper does not give BERT*'s, so BERT's own).
  // sizes:: {dim, layers, heads, intermediate, sequence_length, batch_size, epochs, num_mask_sets, dropout,
  // lr, warmup_steps, layer_norm ("post": BERT's blocks, or "pre")}; settings:: as masked_elmo's.
  bert:: self.masked_elmo + {
    local config = self,
    local sizes = config.sizes,
    builtin_encoder_settings:: {},
    model+: {
      encoder: {
        type: "maelmo_transformer",
        input_dim: sizes.dim,
        num_layers: sizes.layers,
        num_attention_heads: sizes.heads,
        intermediate_dim: sizes.intermediate,
        max_positions: 512,  // BERT's table; the windows are sizes.sequence_length
        dropout: sizes.dropout,
        layer_norm: sizes.layer_norm,
      },
      output_transform: "bert",  // BERT's prediction-head transform (dense, GELU, LayerNorm) before the softmax
    },
    trainer+: {
      optimizer: {
        type: "adamw",
        lr: sizes.lr,
        weight_decay: 0.01,
        parameter_groups: [[["bias", "LayerNorm\\.weight"], { weight_decay: 0.0 }]],
      },
      learning_rate_scheduler: { type: "linear_with_warmup", warmup_steps: sizes.warmup_steps },
      grad_norm: 1.0,  // BERT's clipping
    },
  },
}
