"""
The `README.md` (model card) of a Hugging Face export: what the model is, its sizes, what it was trained
on as the archive records it, and how to load it with `transformers`.
"""

from dataclasses import dataclass
from typing import Optional, Union

from maelmo_plugin.hf.configuration_masked_elmo import MaskedElmoConfig

NOT_RECORDED = "not recorded"


@dataclass
class TrainingRecord:
    """What the archive says about its training run; `None` where it does not say."""

    archive: str
    train_data_path: Optional[str]
    updates: Optional[int]
    validation_perplexity: Optional[float]


def model_card(
    config: MaskedElmoConfig,
    num_parameters: int,
    record: TrainingRecord,
    version: str,
    sentence_layer: Optional[Union[int, str]] = None,
) -> str:
    """The card's text; `sentence_layer` (None: no sentence-transformers files) names the layer whose mean the
    sentence vectors are (`write_sentence_transformers_files`)."""
    perplexity = (
        NOT_RECORDED if record.validation_perplexity is None else f"{record.validation_perplexity:.2f}"
    )
    updates = NOT_RECORDED if record.updates is None else f"{record.updates:,}"
    train_data = NOT_RECORDED if record.train_data_path is None else f"`{record.train_data_path}`"
    sentence_tag = "" if sentence_layer is None else "\n- sentence-transformers"
    sentence_section = "" if sentence_layer is None else sentence_vectors_section(sentence_layer, config)
    return f"""---
library_name: transformers
pipeline_tag: fill-mask
tags:
- masked-elmo
- lstm{sentence_tag}
---
# Masked ELMo

A Masked ELMo language model (Senay & Salin, 2020, https://arxiv.org/abs/2010.04302): BERT's masked-LM
objective on a fully contextual biLSTM encoder, with the softmax tied to the word-piece embedding.
Exported from `{record.archive}` by `allennlp maelmo-export` (maelmo_plugin {version}).

| | |
|---|---|
| hidden size d (embedding and every layer) | {config.hidden_size} |
| LSTM cells per direction (projected to d / 2) | {config.cell_size} |
| biLSTM layers L | {config.num_hidden_layers} |
| word-pieces | {config.vocab_size:,} |
| parameters (embedding and softmax tied, counted once) | {num_parameters:,} |
| training data | {train_data} |
| updates | {updates} |
| validation masked perplexity | {perplexity} |

## Use

The modeling code ships with the weights, so loading needs `trust_remote_code=True`; it runs under
`transformers` 4.x and 5.x with PyTorch only.

```python
import torch
from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer, pipeline

path = "path/to/this/directory"
tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=True)  # 5.x reads config.json too
model = AutoModel.from_pretrained(path, trust_remote_code=True)
batch = tokenizer(["The cat sleeps.", "A dog eats a fish."], padding=True, return_tensors="pt")
with torch.no_grad():
    outputs = model(**batch, output_hidden_states=True)
layers = outputs.hidden_states  # h_0 (embeddings) ... h_L, each (batch, tokens, {config.hidden_size})

fill = pipeline("fill-mask", model=path, trust_remote_code=True)
print(fill("The cat [MASK] on the mat."))
```

- Rows must be right-padded (the tokenizer's default): a padded row gives the same vectors as the row alone,
  and every layer is zero at padding. A left-padded batch is refused.
- There is no maximum length (no position embeddings): the tokenizer does not truncate.
- The special word-pieces (`[PAD]`, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]` and every other `[...]` entry) were
  never masked-LM targets: `AutoModelForMaskedLM` gives them the lowest possible logit, so fill-mask never
  proposes one.
- ELMo-style features mix `hidden_states` (all L + 1 layers, h_0 included) with learned softmax weights.
- Task heads, for fine-tuning (with `Trainer`, say): `AutoModelForSequenceClassification` (that mix, max
  pooling over the real tokens, a linear layer; sentence pairs as `[CLS] a [SEP] b [SEP]`; `problem_type` as
  BERT's) and `AutoModelForTokenClassification` (the mix at every position, a linear layer) load this
  directory with `num_labels=...` and `id2label=...`: the encoder from here, the head newly initialised.
- No ONNX export: the ONNX LSTM operator has no projection, which this model's LSTMs use.
{sentence_section}"""


def sentence_vectors_section(layer: Union[int, str], config: MaskedElmoConfig) -> str:
    num_layers = config.num_hidden_layers
    if layer == "mix":
        which = f"the mean of the {num_layers + 1} layers h_0 ... h_{num_layers}"
    else:
        index = int(layer) % (num_layers + 1)
        which = {0: "the embedding layer h_0", num_layers: f"the top layer h_{num_layers}"}.get(
            index, f"layer h_{index}"
        )
    return SENTENCE_SECTION.format(which=which, layer=repr(layer).replace("'", '"'))


SENTENCE_SECTION = """
## Sentence vectors

This directory also loads with `sentence-transformers` (`modules.json`): a sentence's vector is the mean of
{which} over its word-pieces, `[CLS]` and `[SEP]` included, as maelmo_plugin's
`embed(..., layer={layer}, pool="sentence")` computes it.

```python
from sentence_transformers import SentenceTransformer

model = SentenceTransformer("path/to/this/directory", trust_remote_code=True)
vectors = model.encode(["The cat sleeps.", "A dog eats a fish."])
model.similarity(vectors, vectors)  # cosine
```

Masked ELMo was pre-trained with a masked-LM objective only, not for sentence similarity: fine-tune it with
sentence-transformers' losses on sentence pairs before relying on its cosine similarities.
"""
