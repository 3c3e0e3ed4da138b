"""
Loads Hugging Face exports with `transformers` alone, as a user without AllenNLP would, and writes what it
computed to a JSON file for `export_test.py` to compare with the plugin. Run as a script, in a subprocess
under the venv's transformers 4.x or (with PYTHONPATH=<venv>/transformers5) 5.x:

    python tests/hf/load_export.py REQUEST.json OUTPUT.json

REQUEST holds `representations` (an export directory) with `sentences`, and `fill_mask` (an export
directory) with `fill_mask_sentence`. Importing allennlp or maelmo_plugin fails in this process
(`without_plugin.py`): the export must not need them.
"""

import json
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import without_plugin  # noqa: F401  first: from here on allennlp and maelmo_plugin cannot be imported

# isort: split
import torch
import transformers
from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM, AutoTokenizer, pipeline


def _max_difference(first, second) -> float:
    return max(float((a - b).abs().max()) for a, b in zip(first, second))


def representations(export: str, sentences) -> dict:
    config = AutoConfig.from_pretrained(export, trust_remote_code=True)
    tokenizer = AutoTokenizer.from_pretrained(export, trust_remote_code=True)
    model = AutoModel.from_pretrained(export, trust_remote_code=True).eval()
    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        # Shape: (L + 1, batch_size, num_tokens, dim)
        hidden = torch.stack(model(**batch, output_hidden_states=True).hidden_states)
        alone_difference = 0.0
        for row, sentence in enumerate(sentences):
            alone = torch.stack(
                model(**tokenizer([sentence], return_tensors="pt"), output_hidden_states=True)[1]
            )
            length = alone.size(2)
            alone_difference = max(
                alone_difference, float((alone[:, 0] - hidden[:, row, :length]).abs().max())
            )
        left_padded = tokenizer(sentences, padding=True, return_tensors="pt")
        left_padded["attention_mask"] = left_padded["attention_mask"].flip(1)
        try:
            model(**left_padded)
            left_padding_error = None
        except ValueError as error:
            left_padding_error = str(error)
    features = pipeline("feature-extraction", model=export, trust_remote_code=True)(sentences[0])
    return {
        "config": {key: getattr(config, key) for key in ("model_type", "hidden_size", "num_hidden_layers")},
        "input_ids": batch["input_ids"].tolist(),
        "attention_mask": batch["attention_mask"].tolist(),
        "hidden_states": hidden.tolist(),
        "alone_max_difference": alone_difference,
        "left_padding_error": left_padding_error,
        "feature_extraction": features,
    }


def masked_lm(export: str, sentence: str) -> dict:
    tokenizer = AutoTokenizer.from_pretrained(export, trust_remote_code=True)
    model = AutoModelForMaskedLM.from_pretrained(export, trust_remote_code=True).eval()
    decoder, embedding = model.get_output_embeddings().weight, model.get_input_embeddings().weight
    batch = tokenizer([sentence], return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits
        with tempfile.TemporaryDirectory() as resaved:
            model.save_pretrained(resaved)
            again = AutoModelForMaskedLM.from_pretrained(resaved, trust_remote_code=True).eval()
            resaved_difference = _max_difference([logits], [again(**batch).logits])
        labels = torch.full_like(batch["input_ids"], -100)
        position = batch["input_ids"][0].tolist().index(tokenizer.mask_token_id)
        labels[0, position] = tokenizer.convert_tokens_to_ids("Berlin")
        loss = float(model(**batch, labels=labels).loss)
        expected_loss = float(-logits[0, position].log_softmax(-1)[labels[0, position]])
        labels[0, position] = tokenizer.sep_token_id
        try:
            model(**batch, labels=labels)
            special_label_error = None
        except ValueError as error:
            special_label_error = str(error)
    fill = pipeline("fill-mask", model=export, trust_remote_code=True, top_k=5)(sentence)
    return {
        "decoder_is_embedding": decoder.data_ptr() == embedding.data_ptr()
        and torch.equal(decoder, embedding),
        "resaved_max_difference": resaved_difference,
        "loss": loss,
        "expected_loss": expected_loss,
        "special_label_error": special_label_error,
        "fill_mask": [
            {"wordpiece": tokenizer.convert_ids_to_tokens(answer["token"]), "score": answer["score"]}
            for answer in fill
        ],
    }


def implementations(export: str, sentences) -> dict:
    """
    The encoder under each `lstm_implementation` on a padded batch: the largest difference from torch's
    `nn.LSTM` of its L + 1 representations, and of each parameter's gradient relative to that gradient's
    largest entry (a gradient's scale is the loss's), and the warnings each raised. "torch" runs last:
    torch warns about its CPU LSTM with projection once per process.
    """
    tokenizer = AutoTokenizer.from_pretrained(export)
    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    results, caught_by = {}, {}
    for implementation in ("auto", "cpu", "torch"):
        model = AutoModel.from_pretrained(export, trust_remote_code=True, lstm_implementation=implementation)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            hidden = model(**batch, output_hidden_states=True).hidden_states
            generator = torch.Generator().manual_seed(0)
            sum((layer * torch.randn(layer.shape, generator=generator)).sum() for layer in hidden).backward()
            # Unpadded too: torch warns only there (a packed batch takes another kernel, silently as slow).
            model(**tokenizer(sentences[:1], return_tensors="pt"))
        caught_by[implementation] = [str(warning.message) for warning in caught]
        results[implementation] = (hidden, [parameter.grad for parameter in model.parameters()])
    # An export written before the option existed: its config.json lacks the field.
    with tempfile.TemporaryDirectory() as old:
        shutil.copytree(export, old, dirs_exist_ok=True)
        config_file = Path(old) / "config.json"
        config = json.loads(config_file.read_text())
        written = config.pop("lstm_implementation", None)
        config_file.write_text(json.dumps(config))
        old_model = AutoModel.from_pretrained(old, trust_remote_code=True).eval()
        with torch.no_grad():
            old_difference = float((old_model(**batch)[0] - results["torch"][0][-1]).abs().max())
    return {
        "written": written,
        "without_field": old_model.config.lstm_implementation,
        "without_field_max_difference": old_difference,
        "max_difference": {
            name: _max_difference(results[name][0], results["torch"][0]) for name in ("auto", "cpu")
        },
        "max_relative_gradient_difference": {
            name: max(
                float((ours - theirs).abs().max() / theirs.abs().max())
                for ours, theirs in zip(results[name][1], results["torch"][1])
            )
            for name in ("auto", "cpu")
        },
        "warnings": caught_by,
    }


def main(request_file: str, output_file: str) -> None:
    with open(request_file) as request_json:
        request = json.load(request_json)
    result = {
        "transformers_version": transformers.__version__,
        "representations": representations(request["representations"], request["sentences"]),
        "masked_lm": masked_lm(request["fill_mask"], request["fill_mask_sentence"]),
        "implementations": implementations(request["representations"], request["sentences"]),
    }
    with open(output_file, "w") as output:
        json.dump(result, output)


if __name__ == "__main__":
    main(*sys.argv[1:])
