// The GLUE protocol of Masked ELMo (Senay & Salin, 2020, section 4), which is jiant's (Wang et al., 2019):
// the reference for what the paper leaves unstated is jiant's config/defaults.conf (jsalt-experiments).
//
// One file per task under training_config/glue/ is `task(name)` plus its `settings::` {encoder, seed,
// cuda_device, checkpoint_seconds, deterministic} (the others as in training_config/lm/pretrain_common.libsonnet).
// `settings.encoder` is which row of the paper's Table 2 runs, `<encoder>-<ft|fz>` (fine-tuned or frozen):
//
//   archive-ft, archive-fz  a pre-trained maelmo_masked_elmo_lm (Masked ELMo or BERT*) or maelmo_elmo_lm archive (the paper's
//                           Masked ELMo is archive-ft; every task file's default)
//   random-ft, random-fz    the same archive's architecture and vocabulary, freshly initialised (the control
//                           that shows what pre-training adds)
//   elmo-fz, elmo-ft        the original ELMo from its options and hdf5 weights (the paper's ELMo row: elmo-fz)
//
// Another encoder is a two-line variant file, since AllenNLP's -o cannot reach a hidden field:
//
//   (import "training_config/glue/rte.jsonnet") + { settings+:: { encoder: "elmo-fz" } }
//
// Only paths, which differ per machine, come from the environment (no defaults): MAELMO_GLUE_DIR (the folder
// GLUE's download script wrote: RTE/, CoLA/, ...); for archive-* and random-*, MAELMO_LM_ARCHIVE and
// MAELMO_VOCAB (the word-piece vocabulary it was trained with); for elmo-*, MAELMO_ELMO_OPTIONS and
// MAELMO_ELMO_WEIGHTS.
//
// Table 1 of the paper (= jiant's glue-small-tasks templates 1-3):
local sizes = {
  small: { validation_interval: 100, attention: false, classifier_dropout: 0.4, classifier_hidden: 128, projection: 128 },
  medium: { validation_interval: 100, attention: false, classifier_dropout: 0.2, classifier_hidden: 256, projection: 256 },
  large: { validation_interval: 1000, attention: true, classifier_dropout: 0.2, classifier_hidden: 512, projection: 512 },
};
// Section 4: learning rate 3e-4 for SST-2, CoLA, STS-B, RTE, MRPC, WNLI and 1e-4 for QNLI, MNLI, QQP.
local tasks = {
  rte: { size: "small", lr: 3e-4, folder: "RTE", dev: "dev.tsv" },
  wnli: { size: "small", lr: 3e-4, folder: "WNLI", dev: "dev.tsv" },
  sst2: { size: "medium", lr: 3e-4, folder: "SST-2", dev: "dev.tsv" },
  cola: { size: "medium", lr: 3e-4, folder: "CoLA", dev: "dev.tsv" },
  mrpc: { size: "medium", lr: 3e-4, folder: "MRPC", dev: "dev.tsv" },
  stsb: { size: "large", lr: 3e-4, folder: "STS-B", dev: "dev.tsv" },
  qnli: { size: "large", lr: 1e-4, folder: "QNLI", dev: "dev.tsv" },
  mnli: { size: "large", lr: 1e-4, folder: "MNLI", dev: "dev_matched.tsv" },  // dev_mismatched: allennlp evaluate
  qqp: { size: "large", lr: 1e-4, folder: "QQP", dev: "dev.tsv" },
};

local checkpointing = import "../common/checkpointing.libsonnet";

// The encoder choices of settings.encoder.
local encoders = ["archive-ft", "archive-fz", "random-ft", "random-fz", "elmo-fz", "elmo-ft"];

// Word-pieces for an archive of ours ([CLS] sentence [SEP], as a paragraph in pre-training); for the original
// ELMo, words from spaCy's rule-based English tokenizer (offline; jiant used Moses) and ELMo's characters.
local inputs(finetune) = {
  archive: {
    tokenizer: { type: "maelmo_wordpiece", vocab: std.extVar("MAELMO_VOCAB"), add_special_tokens: true },
    token_indexers: { tokens: { type: "single_id", namespace: null, feature_name: "text_id" } },
    max_tokens: 50,  // jiant's max_seq_len is 40 words; about 50 word-pieces
    embedder: {
      type: "maelmo_masked_elmo_embedder",
      archive_file: std.extVar("MAELMO_LM_ARCHIVE"),
      tokenizer_vocab: std.extVar("MAELMO_VOCAB"),  // fails at start if it is not the archive's vocabulary
      requires_grad: finetune,
      dropout: 0.0,  // as for ELMo below: the model applies its dropout (0.2) to the embedding
    },
  },
  random: self.archive + { embedder+: { reinitialize: true } },
  elmo: {
    tokenizer: { type: "spacy", language: "blank:en" },
    token_indexers: { tokens: { type: "elmo_characters" } },
    max_tokens: 40,  // jiant's max_seq_len
    embedder: {
      // AllenNLP's ELMo, its LSTM states reset before every batch as jiant does.
      type: "maelmo_stateless_elmo",
      options_file: std.extVar("MAELMO_ELMO_OPTIONS"),
      weight_file: std.extVar("MAELMO_ELMO_WEIGHTS"),
      requires_grad: finetune,
      dropout: 0.0,  // jiant: "Dropout is added by the sentence encoder later" (the model's dropout)
    },
  },
};

{
  task(name):: {
    local config = self,
    local settings = config.settings,
    local task = tasks[name],
    local size = sizes[task.size],
    local choice = settings.encoder,
    local input = inputs(std.split(choice, "-")[1] == "ft")[std.split(choice, "-")[0]],
    local directory = std.extVar("MAELMO_GLUE_DIR") + "/" + task.folder + "/",
    assert std.member(encoders, choice) :
      "settings.encoder is one of " + std.join(", ", encoders) + ', not "' + choice + '"',
    local reader = {
      type: "maelmo_glue",
      task: name,
      tokenizer: input.tokenizer,
      token_indexers: input.token_indexers,
      max_tokens: input.max_tokens,
    },
    settings:: error "a GLUE config sets settings::",

    random_seed: settings.seed,
    numpy_seed: settings.seed,
    pytorch_seed: settings.seed,
    dataset_reader: reader,
    // Validation reads the whole dev set. jiant capped mid-training validation at 5,000 rows (val_data_limit)
    // to save time on MNLI, QNLI and QQP; a cap here would also cap `allennlp evaluate` and `predict`, which
    // read with the validation reader, and silently score part of the dev set.
    train_data_path: directory + "train.tsv",
    validation_data_path: directory + task.dev,
    // model.tar.gz also holds the tokenizer and what rebuilds the encoder (maelmo_assets/: the LM's config and
    // vocabulary, or ELMo's options), so it loads without MAELMO_LM_ARCHIVE or the ELMo files.
    include_in_archive: ["maelmo_assets", "metrics.json"],
    model: {
      type: "maelmo_glue_classifier",
      task: name,
      text_field_embedder: { token_embedders: { tokens: input.embedder } },
      // jiant: 2-layer BiLSTM of 1024 (the default encoder), skip_embs = 1, dropout = 0.2.
      skip_embedding: true,
      pair_attention: size.attention,
      attention_hidden_dim: 512,  // jiant's d_hid_attn
      projection_dim: size.projection,
      classifier_hidden_dim: size.classifier_hidden,
      classifier_dropout: size.classifier_dropout,
      dropout: 0.2,
    },
    data_loader: {
      batch_size: 32,  // jiant's default
      shuffle: true,
      // An AllenNLP "epoch" is one of jiant's validation intervals: validate every N updates.
      batches_per_epoch: size.validation_interval,
    },
    validation_data_loader: { batch_size: 64, shuffle: false },
    trainer: {
      cuda_device: settings.cuda_device,
      use_amp: settings.cuda_device >= 0,  // AMP wherever there is a GPU (AllenNLP refuses it on CPU)
      optimizer: { type: "adam", lr: task.lr },
      grad_norm: 5.0,  // jiant's max_grad_norm
      // jiant: halve the learning rate after 2 validations without improvement (lr_patience = 1) ...
      learning_rate_scheduler: { type: "reduce_on_plateau", mode: "max", factor: 0.5, patience: 1 },
      // ... and stop after 6 (patience = 5), or at jiant's max_vals.
      patience: 5,
      num_epochs: 1000,
      validation_metric: "+glue_score",
      checkpointer: checkpointing.checkpointer(1, settings.checkpoint_seconds),
      callbacks: [{ type: "tensorboard" }, { type: "maelmo_exact_resume" }] + checkpointing.determinism(settings),
    },
  },
}
