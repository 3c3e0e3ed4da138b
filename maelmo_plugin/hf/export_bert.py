"""
The Hugging Face export of a BERT* archive (a `maelmo_masked_elmo_lm` with a `maelmo_transformer` encoder
and BERT's output transform): a standard `BertForMaskedLM` directory, which
`transformers` loads with its own code (no `trust_remote_code`), like any BERT on the Hub.
"""

import copy
import os
from typing import Any, Optional

import torch
from transformers import BertConfig, BertForMaskedLM

from maelmo_files.common.special_tokens import PAD
from maelmo_plugin.lm.models.masked_elmo_lm import MaskedElmoLanguageModel
from maelmo_plugin.lm.modules.transformer_encoder import TransformerEncoder

# Both compute BERT with the same torch operations: only summation order may differ.
EQUIVALENCE_TOLERANCE = 1e-4
BERT_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "README.md")


def bert_star_encoder(model: object) -> Optional[TransformerEncoder]:
    """The transformer of a BERT* model (BERT's blocks and output transform), or None for any other model."""
    if not isinstance(model, MaskedElmoLanguageModel) or not model.has_bert_transform:
        return None
    encoder = model.encoder
    return encoder if isinstance(encoder, TransformerEncoder) else None


def bert_for_masked_lm(model: MaskedElmoLanguageModel) -> BertForMaskedLM:
    """BERT* `model` as transformers' `BertForMaskedLM`, weights copied and checked to give the same logits."""
    transformer = bert_star_encoder(model)
    assert transformer is not None, "only a BERT* model (bert_star_encoder) exports as BertForMaskedLM"
    if transformer.layer_norm != "post":
        raise ValueError(
            'This BERT* has pre-LayerNorm blocks (model.encoder.layer_norm "pre"), which BertForMaskedLM cannot '
            "hold: only post-LayerNorm BERT* archives export; use the archive with the plugin."
        )
    namespace = model.namespace
    config = BertConfig(
        **{
            **transformer.config.to_dict(),
            "vocab_size": model.vocab.get_vocab_size(namespace),
            "pad_token_id": model.vocab.get_token_index(PAD, namespace),
            "architectures": ["BertForMaskedLM"],
            "tie_word_embeddings": True,
        }
    )
    hf_model = BertForMaskedLM(config)
    hf_model.load_state_dict(_hf_state_dict(model), strict=True)
    hf_model.eval()
    _check_equivalence(model, hf_model)
    return hf_model


def _hf_state_dict(model: MaskedElmoLanguageModel) -> dict[str, torch.Tensor]:
    state = {}
    for name, tensor in model.state_dict().items():
        if name.startswith("_encoder.bert."):
            state["bert." + name.removeprefix("_encoder.bert.")] = tensor
        elif name.startswith("_transform."):
            state["cls.predictions.transform." + name.removeprefix("_transform.")] = tensor
        elif name == "_embedding.weight":  # also the tied decoder
            state["bert.embeddings.word_embeddings.weight"] = tensor
            state["cls.predictions.decoder.weight"] = tensor
        elif name == "_output_bias":
            state["cls.predictions.bias"] = tensor
            state["cls.predictions.decoder.bias"] = tensor
        else:
            raise ValueError(f"The BERT* model has a parameter {name!r} that the export does not map.")
    return state


def _check_equivalence(model: MaskedElmoLanguageModel, hf_model: BertForMaskedLM) -> None:
    """The exported model's logits equal the plugin's at every position of a padded probe batch."""
    vocab_size = hf_model.config.vocab_size
    token_ids = torch.arange(5, 5 + 12).remainder(vocab_size).view(2, 6)
    mask = torch.ones_like(token_ids, dtype=torch.bool)
    mask[1, 4:] = False
    was_training = model.training
    model.eval()
    with torch.no_grad():
        expected = model._output_logits(model.representations(token_ids, mask)[-1])[mask]
        actual = hf_model(token_ids, attention_mask=mask.long()).logits[mask]
    model.train(was_training)
    difference = float((actual - expected).abs().max())
    if difference > EQUIVALENCE_TOLERANCE:
        raise RuntimeError(
            f"The exported BertForMaskedLM's logits differ from the plugin's by {difference:.2e} (more than "
            f"{EQUIVALENCE_TOLERANCE}): the export would not be the same model. Please report this."
        )


def write_bert_export(directory: str, hf_model: BertForMaskedLM, tokenizer: Any, card: str) -> None:
    hf_model.save_pretrained(directory, safe_serialization=True)
    exported_tokenizer = copy.deepcopy(tokenizer)  # the archive's tokenizer is cached and shared
    exported_tokenizer.model_max_length = hf_model.config.max_position_embeddings
    exported_tokenizer.save_pretrained(directory)
    with open(os.path.join(directory, "README.md"), "w", encoding="utf-8") as readme:
        readme.write(card)
    missing = [name for name in BERT_FILES if not os.path.exists(os.path.join(directory, name))]
    if missing:
        raise RuntimeError(f"The export in {directory} lacks {missing}.")


def bert_card(hf_model: BertForMaskedLM, train_data_path: Any, perplexity: Any) -> str:
    config = hf_model.config
    return (
        "---\nlibrary_name: transformers\npipeline_tag: fill-mask\n---\n\n"
        "# BERT* (the baseline of Masked ELMo, Senay & Salin 2020)\n\n"
        f"A BERT ({config.num_hidden_layers} layers of {config.hidden_size}, {config.num_attention_heads} heads) "
        f"pre-trained with the masked-LM objective by maelmo_plugin's pipeline, on {train_data_path}, with "
        f"the windows and masks of its Masked ELMo. Validation masked perplexity: {perplexity}.\n\n"
        "```python\nfrom transformers import AutoModelForMaskedLM, AutoTokenizer\n"
        "model = AutoModelForMaskedLM.from_pretrained(PATH)\ntokenizer = AutoTokenizer.from_pretrained(PATH)\n```\n"
    )
