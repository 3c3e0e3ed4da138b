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

With another `layer` (an index of h_0 ... h_L, or "mix": their mean, the plugin's "mix" at equal weights),
a `WeightedLayerPooling` module comes between the two (`1_WeightedLayerPooling/`, the pooling moving to
`2_Pooling/`): the Transformer hands on all L + 1 layers (`output_hidden_states` in its `config_args`), and
the module's fixed weights select that layer (a weight of 1 on it, 0 on the layers above) or average them
all (a weight of 1 on each); the vector is then `embed(sentences, layer=layer, pool="sentence")`.

The files use the layout sentence-transformers has read since 2.x (the module types
`sentence_transformers.models.Transformer` and `.Pooling`, which 6.x maps to its own classes), rather than
the one 6.x writes (`sentence_transformers.base.modules...`, which no earlier version knows): 6.2 under
transformers 5.23 in the tests; 3.4 and 5.1 under transformers 4.43 checked by hand (the same vectors).
"""

import json
import os
from typing import Any, Union

import torch
from safetensors.torch import save_file

# The vector of the top layer, h_L: the default, and the only one without a WeightedLayerPooling module.
TOP_LAYER = -1
LAYERS_DIR = "1_WeightedLayerPooling"
POOLING_DIR = "1_Pooling"
POOLING_AFTER_LAYERS_DIR = "2_Pooling"
SENTENCE_TRANSFORMERS_FILES = (
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    os.path.join(POOLING_DIR, "config.json"),
)
# path "": the Transformer module is the export itself, which transformers loads as it is.
TRANSFORMER_MODULE = {"path": "", "type": "sentence_transformers.models.Transformer"}
LAYERS_MODULE = {"path": LAYERS_DIR, "type": "sentence_transformers.models.WeightedLayerPooling"}
POOLING_TYPE = "sentence_transformers.models.Pooling"
# max_seq_length null: an LSTM has no position embeddings, so nothing is truncated (the tokenizer's own
# maximum is transformers' "no limit"). Transformers 4.x logs once that it will not truncate.
TRANSFORMER_CONFIG: dict[str, Any] = {"max_seq_length": None, "do_lower_case": False}
# The model card names the similarity; without it sentence-transformers assumes cosine as well.
MODEL_CONFIG: dict[str, Any] = {"prompts": {}, "default_prompt_name": None, "similarity_fn_name": "cosine"}


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


def layer_weights(layer: Union[int, str], num_layers: int) -> tuple[int, list[float]]:
    """
    `(layer_start, weights)` of the `WeightedLayerPooling` that gives `layer` of h_0 ... h_L (`num_layers`
    = L): an index, negative from the top as in the plugin, or "mix" (every layer, equal weights). Raises
    ValueError naming the choices for any other value.
    """
    if layer == "mix":
        return 0, [1.0] * (num_layers + 1)
    if type(layer) is not int or not -(num_layers + 1) <= layer <= num_layers:
        raise ValueError(
            f"The sentence layer must be an integer from {-(num_layers + 1)} to {num_layers} (0: the embeddings, "
            f"-1: the top layer h_{num_layers}) or 'mix', got {layer!r}."
        )
    start = layer % (num_layers + 1)
    return start, [1.0] + [0.0] * (num_layers - start)


def sentence_transformers_files(layer: Union[int, str], num_layers: int) -> tuple[str, ...]:
    """The files `write_sentence_transformers_files` writes for `layer`."""
    if layer == TOP_LAYER or layer == num_layers:
        return SENTENCE_TRANSFORMERS_FILES
    return (
        *SENTENCE_TRANSFORMERS_FILES[:3],
        os.path.join(LAYERS_DIR, "config.json"),
        os.path.join(LAYERS_DIR, "model.safetensors"),
        os.path.join(POOLING_AFTER_LAYERS_DIR, "config.json"),
    )


def write_sentence_transformers_files(
    directory: str, hidden_size: int, num_layers: int = 2, layer: Union[int, str] = TOP_LAYER
) -> None:
    """
    Writes the files of the module docstring into an export `directory` whose model has size `hidden_size`
    and `num_layers` biLSTM layers, for the sentence vectors of `layer` (see `layer_weights`).
    """
    start, weights = layer_weights(layer, num_layers)
    top = start == num_layers
    transformer_config = dict(TRANSFORMER_CONFIG)
    modules: list[dict[str, Any]] = [TRANSFORMER_MODULE]
    if not top:
        # The Transformer module hands on hidden_states only when the model's config asks for them.
        transformer_config["config_args"] = {"output_hidden_states": True}
        modules.append(LAYERS_MODULE)
        layers_config = {
            "word_embedding_dimension": hidden_size,
            "layer_start": start,
            "num_hidden_layers": num_layers,
        }
        os.makedirs(os.path.join(directory, LAYERS_DIR), exist_ok=True)
        _write_json(os.path.join(directory, LAYERS_DIR, "config.json"), layers_config)
        save_file(
            {"layer_weights": torch.tensor(weights)}, os.path.join(directory, LAYERS_DIR, "model.safetensors")
        )
    pooling_dir = POOLING_DIR if top else POOLING_AFTER_LAYERS_DIR
    modules.append({"path": pooling_dir, "type": POOLING_TYPE})
    os.makedirs(os.path.join(directory, pooling_dir), exist_ok=True)
    _write_json(os.path.join(directory, pooling_dir, "config.json"), pooling_config(hidden_size))
    numbered = [{"idx": index, "name": str(index), **module} for index, module in enumerate(modules)]
    _write_json(os.path.join(directory, "modules.json"), numbered)
    _write_json(os.path.join(directory, "sentence_bert_config.json"), transformer_config)
    _write_json(os.path.join(directory, "config_sentence_transformers.json"), MODEL_CONFIG)


def _write_json(path: str, content: object) -> None:
    with open(path, "w", encoding="utf-8") as json_file:
        json.dump(content, json_file, indent=2)
        json_file.write("\n")
