// GLUE CoLA with the paper's protocol (Senay & Salin, 2020, section 4: jiant's heads and Table 1's sizes),
// defined in glue.libsonnet. It builds:
//   dataset_reader   maelmo_glue              maelmo_plugin/glue/dataset_readers/glue.py
//   tokenizer        maelmo_wordpiece         maelmo_plugin/common/wordpiece.py
//   data_loader      multiprocess             AllenNLP's; one "epoch" is one of Table 1's validation intervals
//   model            maelmo_glue_classifier   maelmo_plugin/glue/models/glue_classifier.py
//   token_embedder   maelmo_masked_elmo_embedder          maelmo_plugin/lm/token_embedders/masked_elmo_embedder.py
//   callback         maelmo_exact_resume      maelmo_plugin/training/exact_resume.py
//   checkpointer     maelmo_atomic            maelmo_plugin/training/atomic_checkpointer.py
// with settings.encoder "archive-ft", Table 2's Masked ELMo row (glue.libsonnet lists the others: "elmo-*"
// builds maelmo_stateless_elmo, maelmo_plugin/lm/token_embedders/stateless_elmo.py). Paths come from the
// environment: MAELMO_GLUE_DIR, MAELMO_LM_ARCHIVE, MAELMO_VOCAB. `allennlp maelmo-config` prints it expanded.
local glue = import "glue.libsonnet";

glue.task("cola") + {
  settings:: {
    encoder: "archive-ft",  // a pre-trained archive, fine-tuned; another: a two-line variant file (glue.libsonnet)
    seed: 13370,
    cuda_device: -1,  // CPU; a GPU index (0) runs it there, with AMP
    checkpoint_seconds: 900,  // the most a crash costs
    deterministic: false,  // true: bit-identical GPU runs, at some cost in speed
  },
}
