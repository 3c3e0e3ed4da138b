"""
The sentence-transformers files that `allennlp maelmo-export --sentence-transformers` adds to a Masked ELMo
export, so that the same directory also loads as a `SentenceTransformer` (with `trust_remote_code=True`):

    modules.json                        module 0: a `Transformer` on the directory itself (its config.json,
                                        weights, modeling code and tokenizer); module 1: `1_Pooling`
    sentence_bert_config.json           the Transformer's settings: no maximum length, no lower-casing
    1_Pooling/config.json               mean pooling over the attention mask
    config_sentence_transformers.json   cosine similarity

`SentenceTransformer(path, trust_remote_code=True).encode(sentences)` then gives the mean of h_L (the
model's `last_hidden_state`) over every word-piece of `[CLS] sentence [SEP]`: the plugin's
`embed(sentences, layer=-1, pool="sentence")`.

The files use the layout sentence-transformers has read since 2.x (the module types
`sentence_transformers.models.Transformer` and `.Pooling`, which 6.x maps to its own classes), rather than
the one 6.x writes (`sentence_transformers.base.modules...`, which no earlier version knows): 6.2 under
transformers 5.23 in the tests; 3.4 and 5.1 under transformers 4.43 checked by hand (the same vectors).
"""

import json
import os

POOLING_DIR = "1_Pooling"
SENTENCE_TRANSFORMERS_FILES = (
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    os.path.join(POOLING_DIR, "config.json"),
)
MODULES = [
    # path "": the Transformer module is the export itself, which transformers loads as it is.
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": POOLING_DIR, "type": "sentence_transformers.models.Pooling"},
]
# max_seq_length null: an LSTM has no position embeddings, so nothing is truncated (the tokenizer's own
# maximum is transformers' "no limit"). Transformers 4.x logs once that it will not truncate.
TRANSFORMER_CONFIG = {"max_seq_length": None, "do_lower_case": False}
# The model card names the similarity; without it sentence-transformers assumes cosine as well.
MODEL_CONFIG = {"prompts": {}, "default_prompt_name": None, "similarity_fn_name": "cosine"}


def pooling_config(hidden_size: int) -> dict:
    """Mean pooling over the tokens whose attention mask is 1: [CLS] and [SEP] in, padding out."""
    modes = (
        "cls_token",
        "mean_tokens",
        "max_tokens",
        "mean_sqrt_len_tokens",
        "weightedmean_tokens",
        "lasttoken",
    )
    return {
        "word_embedding_dimension": hidden_size,
        **{f"pooling_mode_{mode}": mode == "mean_tokens" for mode in modes},
        "include_prompt": True,
    }


def write_sentence_transformers_files(directory: str, hidden_size: int) -> None:
    """Writes the files of the module docstring into an export `directory` whose model has size `hidden_size`."""
    os.makedirs(os.path.join(directory, POOLING_DIR), exist_ok=True)
    contents = (MODULES, TRANSFORMER_CONFIG, MODEL_CONFIG, pooling_config(hidden_size))
    for name, content in zip(SENTENCE_TRANSFORMERS_FILES, contents):
        with open(os.path.join(directory, name), "w", encoding="utf-8") as json_file:
            json.dump(content, json_file, indent=2)
            json_file.write("\n")
