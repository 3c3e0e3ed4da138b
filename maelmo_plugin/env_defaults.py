"""
Default values of the environment variables that the Jsonnet files under `training_config/` read.

Jsonnet's `std.extVar` has no default, and AllenNLP hands every environment variable to Jsonnet as an
external variable. Setting these defaults when the plugin is imported (which `allennlp` does before it
reads a config) lets `allennlp train training_config/lm/pretrain_small.jsonnet` run as is, while any variable
set by the user, or an `-o` override, still wins.
"""
import os
from pathlib import Path

SAMPLE_DIR = Path(__file__).parent / "data" / "sample"

DEFAULTS = {
    # Pre-training corpus (plain text, one paragraph per line, blank line between documents; globs allowed).
    "MAELMO_TRAIN_PATH": str(SAMPLE_DIR / "train.txt"),
    "MAELMO_VALIDATION_PATH": str(SAMPLE_DIR / "valid.txt"),
    # Word-piece vocabulary: a vocab.txt, a tokenizer directory, or a hub name such as bert-base-cased.
    "MAELMO_VOCAB": str(SAMPLE_DIR / "vocab.txt"),
    # -1 for CPU, a GPU index otherwise; AMP is only switched on when a GPU is used.
    "MAELMO_CUDA_DEVICE": "-1",
    "MAELMO_USE_AMP": "1",
    "MAELMO_SEED": "13370",
    # Mask accumulation: "batched" (the k masked copies in one batch) or "sequential" (k passes, less memory).
    "MAELMO_MASK_ACCUMULATION": "batched",
    # k, the number of mask sets per batch; empty means the config's own value (4 in pretrain.jsonnet).
    "MAELMO_MASK_SETS": "",
    # A mid-epoch checkpoint every this many seconds (and one at every epoch's end): the most a crash costs.
    "MAELMO_CHECKPOINT_SECONDS": "900",
    # GLUE fine-tuning (training_config/glue/): where GLUE's download script put the data, which encoder
    # ("archive": a maelmo_masked_lm / maelmo_elmo_lm model.tar.gz; "elmo": the original ELMo's options
    # and hdf5 weights), and whether it is fine-tuned ("1", the paper's Masked ELMo) or frozen ("0").
    "MAELMO_GLUE_DIR": "glue_data",
    "MAELMO_GLUE_ENCODER": "archive",
    "MAELMO_GLUE_FINETUNE": "1",
    "MAELMO_LM_ARCHIVE": "runs/sample/model.tar.gz",
    "MAELMO_ELMO_OPTIONS": "elmo_options.json",
    "MAELMO_ELMO_WEIGHTS": "elmo_weights.hdf5",
    # NER (training_config/tagging/ner.jsonnet): CoNLL-2003's training and development files, and GloVe's
    # glove.6B.50d.txt for the word embeddings ("" starts them random).
    "MAELMO_NER_TRAIN": "conll2003/eng.train",
    "MAELMO_NER_VALIDATION": "conll2003/eng.testa",
    "MAELMO_GLOVE": "",
}


def apply() -> None:
    for name, value in DEFAULTS.items():
        os.environ.setdefault(name, value)
