// Named-entity recognition on CoNLL-2003 with Masked ELMo in ELMo's place. This is allennlp-models'
// training_config/tagging/ner_elmo.jsonnet, the ELMo paper's NER model (test F1 92.22 in the paper, 92.51 for
// AllenNLP's model): the conll2003 reader with BIOUL tags, a crf_tagger with constrained decoding over a
// 2-layer biLSTM of 200 per direction, dropout 0.5, L2 0.1 on the scalar mix, Adam 1e-3, gradient norm 5,
// batches of 64, 75 epochs with patience 25. What differs:
//   - "elmo" is a Masked ELMo (MAELMO_LM_ARCHIVE: a pre-training model.tar.gz or an export), frozen as ELMo
//     is in the recipe, through maelmo_masked_elmo_mismatched_embedder: ELMo's scalar mix of all L + 1 layers on the
//     word-pieces, then the mean of each word's pieces (its docstring says why);
//   - GloVe (glove.6B.50d.txt or .gz) is read from MAELMO_GLOVE when it names a file; empty, the 50-d word
//     embeddings start random (the recipe downloads GloVe);
//   - model selection uses the development set (eng.testa) where the recipe validates on the test set; score
//     the test set once, at the end: allennlp evaluate model.tar.gz eng.testb --include-package maelmo_plugin.
//
// It builds:
//   dataset_reader   maelmo_conll2003             maelmo_plugin/tagging/dataset_readers/conll2003.py
//   model            crf_tagger                   allennlp-models' (allennlp_models/tagging)
//   token_embedder   maelmo_masked_elmo_mismatched_embedder   maelmo_plugin/lm/token_embedders/masked_elmo_mismatched_embedder.py
//   token_indexer    maelmo_wordpiece_mismatched  maelmo_plugin/common/wordpiece_mismatched.py
//   callback         maelmo_exact_resume          maelmo_plugin/training/exact_resume.py
//   checkpointer     maelmo_atomic                maelmo_plugin/training/atomic_checkpointer.py
//
// Data: MAELMO_NER_TRAIN and MAELMO_NER_VALIDATION, CoNLL-2003 files (eng.train, eng.testa) in their
// original format, "word POS chunk NER" per line, IOB1 tags.
// settings.lm_dim must be the archive's d: 768 for the paper's size (training_config/pretrain.jsonnet, the
// default here), 128 for lm/pretrain_small.jsonnet (the Quickstart's archive): a two-line variant file sets it,
//   (import "training_config/tagging/ner.jsonnet") + { settings+:: { lm_dim: 128 } }
// and the tagger stops at start with both sizes if it is wrong.
local WORD_DIM = 50;  // GloVe 6B 50d
local CHARACTER_DIM = 128;  // the character CNN's filters
local FINETUNE = false;  // the recipe freezes ELMo; true fine-tunes the Masked ELMo ("ft" of the GLUE tables)
local glove = std.extVar("MAELMO_GLOVE");
local vocab = std.extVar("MAELMO_VOCAB");
local checkpointing = import "../common/checkpointing.libsonnet";

{
  local config = self,
  // See training_config/lm/pretrain_common.libsonnet for the settings and how a variant file changes them.
  settings:: {
    lm_dim: 768,  // the Masked ELMo archive's d (the paper's size)
    seed: 13370,
    cuda_device: -1,  // CPU; a GPU index (0) runs it there
    checkpoint_seconds: 900,  // the most a crash costs
    deterministic: false,  // true: bit-identical GPU runs, at some cost in speed
  },

  random_seed: config.settings.seed,
  numpy_seed: config.settings.seed,
  pytorch_seed: config.settings.seed,
  dataset_reader: {
    type: "maelmo_conll2003",  // allennlp-models' conll2003, on compressed files too
    tag_label: "ner",
    convert_to_coding_scheme: "BIOUL",
    token_indexers: {
      tokens: { type: "single_id", lowercase_tokens: true },
      token_characters: { type: "characters", min_padding_length: 3 },
      // The Masked ELMo's word-pieces, and each word's span of them ([CLS] words [SEP], as in pre-training).
      maelmo: { type: "maelmo_wordpiece_mismatched", vocab: vocab },
    },
  },
  train_data_path: std.extVar("MAELMO_NER_TRAIN"),
  validation_data_path: std.extVar("MAELMO_NER_VALIDATION"),
  // The archive holds the tokenizer and what rebuilds the Masked ELMo, so it loads without either.
  include_in_archive: ["maelmo_assets", "metrics.json"],
  model: {
    type: "crf_tagger",
    label_encoding: "BIOUL",
    constrain_crf_decoding: true,
    calculate_span_f1: true,
    dropout: 0.5,
    include_start_end_transitions: false,
    text_field_embedder: {
      token_embedders: {
        tokens: {
          type: "embedding",
          embedding_dim: WORD_DIM,
          pretrained_file: if glove == "" then null else glove,
          trainable: true,
        },
        token_characters: {
          type: "character_encoding",
          // Sized by the characters' vocabulary (the indexer's namespace), not the words' default one.
          embedding: { embedding_dim: 16, vocab_namespace: "token_characters" },
          encoder: {
            type: "cnn",
            embedding_dim: 16,
            num_filters: CHARACTER_DIM,
            ngram_filter_sizes: [3],
            conv_layer_activation: "relu",
          },
        },
        maelmo: {
          type: "maelmo_masked_elmo_mismatched_embedder",
          archive_file: std.extVar("MAELMO_LM_ARCHIVE"),
          tokenizer_vocab: vocab,  // fails at start if it is not the archive's vocabulary
          pool: "mean",
          requires_grad: FINETUNE,
          do_layer_norm: false,
          dropout: 0.0,  // as the recipe's ELMo: the tagger applies its dropout (0.5)
        },
      },
    },
    encoder: {
      type: "lstm",
      input_size: config.settings.lm_dim + CHARACTER_DIM + WORD_DIM,
      hidden_size: 200,
      num_layers: 2,
      dropout: 0.5,
      bidirectional: true,
    },
    // Matches the Masked ELMo's mixing weights (..._mixes.0.scalar_parameters.N), as it matches ELMo's.
    regularizer: { regexes: [["scalar_parameters", { type: "l2", alpha: 0.1 }]] },
  },
  data_loader: { batch_size: 64, shuffle: true },
  trainer: {
    cuda_device: config.settings.cuda_device,
    // No mixed precision, as in the recipe: the CRF's forward algorithm sums scores in log space.
    optimizer: { type: "adam", lr: 0.001 },
    validation_metric: "+f1-measure-overall",
    num_epochs: 75,
    grad_norm: 5.0,
    patience: 25,
    // The recipe keeps 3 checkpoints; these also resume a crash exactly.
    checkpointer: checkpointing.checkpointer(3, config.settings.checkpoint_seconds),
    callbacks: [{ type: "maelmo_exact_resume" }] + checkpointing.determinism(config.settings),
  },
}
