"""
Exports a Masked ELMo archive (`maelmo_masked_elmo_lm`) as a self-contained Hugging Face model directory:

    config.json                    MaskedElmoConfig, with `auto_map` naming the two module files (for the
                                   encoder, the masked LM and the sequence- and token-classification heads)
    model.safetensors              the weights (no pickle anywhere: the decoder is tied, stored once)
    configuration_masked_elmo.py   copied verbatim from maelmo_plugin/hf/
    modeling_masked_elmo.py        copied verbatim; imports only torch and transformers
    cpu_lstm_recurrence.py         the CPU recurrence the modeling file runs on a CPU, its files of
                                   maelmo_plugin/lm/modules/recurrence/ joined in one (torch only)
    tokenizer.json, vocab.txt, tokenizer_config.json, special_tokens_map.json
    README.md                      the model card
    modules.json, ...              with `sentence_transformers=True`, the sentence-transformers files
                                   (`export_sentence_transformers.py`), for the layer `sentence_layer`

which `transformers` 4.x and 5.x load with `trust_remote_code=True`, without AllenNLP or this plugin.
The export checks itself before it is moved into place: the HF model's L + 1 representations must equal
the plugin's on a probe batch.
"""

import copy
import json
import logging
import os
import tarfile
from typing import Any, Optional, Union

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import Archive, load_archive

from maelmo_files.common.special_tokens import CLS, MASK, PAD, SEP, UNK
from maelmo_plugin.common.export_directory import check_export_paths, write_into_place
from maelmo_plugin.common.wordpiece import WordpieceTokenizer
from maelmo_plugin.hf.configuration_masked_elmo import MaskedElmoConfig
from maelmo_plugin.hf.export_bert import bert_card, bert_for_masked_lm, bert_star_encoder, write_bert_export
from maelmo_plugin.hf.export_sentence_transformers import (
    TOP_LAYER,
    layer_weights,
    sentence_transformers_files,
    write_sentence_transformers_files,
)
from maelmo_plugin.hf.model_card import TrainingRecord, model_card
from maelmo_plugin.hf.modeling_masked_elmo import AUTO_CLASSES, MaskedElmoForMaskedLM, MaskedElmoModel
from maelmo_plugin.lm.loading import hf_names
from maelmo_plugin.lm.models.masked_elmo_lm import MaskedElmoLanguageModel
from maelmo_plugin.lm.modules.masked_elmo_encoder import MaskedElmoEncoder
from maelmo_plugin.lm.modules.recurrence import standalone_source
from maelmo_plugin.version import VERSION

logger = logging.getLogger(__name__)

# transformers' own "no limit" (VERY_LARGE_INTEGER): an LSTM has no position embeddings, so no maximum length.
NO_MAX_LENGTH = int(1e30)
# Files that would hold pickled tensors; none may be in an export (loading a pickle can run code).
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".th", ".pkl", ".pickle", ".ckpt")
# The name under which modeling_masked_elmo.py imports the CPU recurrence (a relative import, which
# transformers' custom-code loader copies along).
RECURRENCE_FILE = "cpu_lstm_recurrence.py"
EXPECTED_FILES = (
    "config.json",
    "model.safetensors",
    "configuration_masked_elmo.py",
    "modeling_masked_elmo.py",
    RECURRENCE_FILE,
    "tokenizer.json",
    "tokenizer_config.json",
    "README.md",
)
# The auto classes an export serves, each with its own `auto_map` entry (a task head loads the encoder's
# weights and starts its scalar mix and classifier fresh). `architectures` stays the masked LM: the weights'.
AUTO_MAP = {
    "AutoConfig": f"configuration_masked_elmo.{MaskedElmoConfig.__name__}",
    **{name: f"modeling_masked_elmo.{model_class.__name__}" for name, model_class in AUTO_CLASSES.items()},
}
# On a CPU both run the same recurrence (equal on the fixtures); with "torch" the sums come in another order.
EQUIVALENCE_TOLERANCE = 1e-4


def export_archive(
    archive_file: str,
    output_dir: str,
    force: bool = False,
    sentence_transformers: bool = False,
    sentence_layer: Union[int, str] = TOP_LAYER,
) -> str:
    """
    Writes the Hugging Face export of `archive_file` (a `maelmo_masked_elmo_lm` model.tar.gz, or its
    serialization directory) to `output_dir` and returns `output_dir`. With `sentence_transformers`, the
    directory also loads as a `SentenceTransformer` (Masked ELMo archives only): the mean over the
    word-pieces of layer `sentence_layer` (an index of h_0 ... h_L, -1 the top, or "mix": their mean), the
    plugin's `embed(..., layer=sentence_layer, pool="sentence")`.

    A non-empty `output_dir` is refused unless it holds a previous export and `force` is given; the export
    is written beside it and moved into place only once complete and checked
    (`maelmo_plugin.common.export_directory`).
    """
    check_export_paths(archive_file, output_dir, force)
    archive = load_archive(archive_file)
    tokenizer = _wordpiece_tokenizer(archive, archive_file)
    record = _training_record(archive, archive_file)
    if isinstance(archive.model, MaskedElmoLanguageModel) and bert_star_encoder(archive.model) is not None:
        if sentence_transformers:
            raise ConfigurationError(
                f"{archive_file} holds BERT* (a maelmo_transformer encoder): the sentence-transformers files are written for "
                f"Masked ELMo exports only, whose vectors are tested against the plugin's. Leave out "
                f"--sentence-transformers."
            )
        # BERT*: a standard BertForMaskedLM directory, loaded by transformers' own code.
        bert = bert_for_masked_lm(archive.model)
        card = bert_card(bert, record.train_data_path, record.validation_perplexity)

        def write(directory: str) -> None:
            write_bert_export(directory, bert, tokenizer, card)

    else:
        model = _exportable_model(archive, archive_file)
        config = hf_config(model, tokenizer, archive_file)
        try:
            layer_weights(sentence_layer, config.num_hidden_layers)
        except ValueError as error:
            raise ConfigurationError(f"{archive_file}: {error}") from None
        hf_model = MaskedElmoForMaskedLM(config)
        hf_model.load_state_dict(hf_state_dict(model), strict=True)
        hf_model.eval()
        _check_equivalence(model, hf_model.masked_elmo, config)

        def write(directory: str) -> None:
            _write(directory, hf_model, tokenizer, record, sentence_layer if sentence_transformers else None)

    write_into_place(archive_file, output_dir, force, write)
    logger.debug("Exported %s to %s", archive_file, output_dir)  # the command prints its own line
    return output_dir


def _exportable_model(archive: Archive, archive_file: str) -> MaskedElmoLanguageModel:
    model = archive.model
    model_type = archive.config.as_dict().get("model", {}).get("type")
    if model_type == "maelmo_elmo_lm":
        raise ConfigurationError(
            f"{archive_file} holds the ELMo baseline (maelmo_elmo_lm); the Hugging Face export covers Masked "
            f"ELMo (maelmo_masked_elmo_lm) and BERT*. The baseline's vectors are available through "
            f"the plugin: the maelmo_representations predictor or `maelmo maelmo-embed`."
        )
    if model_type == "maelmo_glue_classifier":
        raise ConfigurationError(
            f"{archive_file} holds a GLUE classifier (maelmo_glue_classifier): export the pre-trained Masked "
            f"ELMo language model archive it was fine-tuned from instead."
        )
    # BERT* is a MaskedElmoLanguageModel too, with a transformer for encoder: `export_archive` exports it on
    # its own path, the ONNX export not at all.
    if bert_star_encoder(model) is not None:
        raise ConfigurationError(
            f"{archive_file} holds BERT* (a maelmo_transformer encoder), which this export does not cover: its Hugging Face "
            f"export (--format hf) is a standard BertForMaskedLM directory."
        )
    if not isinstance(model, MaskedElmoLanguageModel):
        raise ConfigurationError(
            f"{archive_file} holds a {model_type!r} model ({type(model).__name__}); the Hugging Face export "
            f"needs a Masked ELMo language model archive (maelmo_masked_elmo_lm)."
        )
    if not isinstance(model.encoder, MaskedElmoEncoder):
        raise ConfigurationError(
            f"{archive_file} holds a language model whose encoder is {model.encoder.configured_type}: the "
            f"exports cover the Masked ELMo encoder (maelmo_masked_elmo) and BERT*. Its vectors are available "
            f"through the plugin: the maelmo_representations predictor or `maelmo maelmo-embed`."
        )
    cell = masked_elmo_encoder(model).options.cell
    if cell != "fused":
        raise ConfigurationError(
            f"{archive_file} was trained with model.encoder.cell {cell!r} (ELMo's clipped "
            f"cell), which torch's nn.LSTM cannot run: only the fused cell (the default, 'fused') exports."
        )
    return model


def masked_elmo_encoder(model: MaskedElmoLanguageModel) -> MaskedElmoEncoder:
    """The biLSTM encoder of a model that `_exportable_model` accepts (it refuses BERT*'s transformer)."""
    encoder = model.encoder
    assert isinstance(encoder, MaskedElmoEncoder), f"{type(encoder).__name__} is no Masked ELMo encoder"
    return encoder


def _wordpiece_tokenizer(archive: Archive, archive_file: str) -> Any:
    tokenizer = getattr(archive.validation_dataset_reader, "tokenizer", None)
    if not isinstance(tokenizer, WordpieceTokenizer):
        raise ConfigurationError(
            f"The dataset reader of {archive_file} has no word-piece tokenizer to export: the export needs "
            f"the maelmo_mlm_corpus reader of a pre-training run."
        )
    return tokenizer.hf_tokenizer


def hf_config(model: MaskedElmoLanguageModel, tokenizer: Any, archive_file: str) -> MaskedElmoConfig:
    """The `MaskedElmoConfig` of `model`, whose vocabulary must be the tokenizer's, id for id."""
    namespace = model.namespace
    token_to_index = model.vocab.get_token_to_index_vocabulary(namespace)
    if token_to_index != tokenizer.get_vocab():
        raise ConfigurationError(
            f"In {archive_file}, the vocabulary namespace {namespace!r} and the dataset reader's tokenizer "
            f"give different ids to some word-pieces: an exported tokenizer would not match the embedding. "
            f"Retrain with the same vocab for the maelmo_wordpiece vocabulary and tokenizer."
        )
    encoder = masked_elmo_encoder(model)
    return MaskedElmoConfig(
        vocab_size=len(token_to_index),
        hidden_size=encoder.get_input_dim(),
        cell_size=encoder.options.cells,
        num_hidden_layers=encoder.num_layers,
        hidden_dropout_prob=float(encoder.bilstm_layers[0].dropout.p),
        pad_token_id=token_to_index[PAD],
        unk_token_id=token_to_index[UNK],
        cls_token_id=token_to_index[CLS],
        sep_token_id=token_to_index[SEP],
        mask_token_id=token_to_index[MASK],
        # The masking module's rule (every "[...]" entry): the export never predicts what it never learnt.
        never_predicted_token_ids=model.never_predicted.nonzero().squeeze(1).tolist(),
        tie_word_embeddings=True,
        tokenizer_class=type(tokenizer).__name__.removesuffix("Fast"),
        architectures=["MaskedElmoForMaskedLM"],
    )


def hf_state_dict(model: MaskedElmoLanguageModel) -> dict[str, torch.Tensor]:
    """The plugin's parameters under the names of `MaskedElmoForMaskedLM` (the tied ones: the same tensor)."""
    return {hf_name: tensor for name, tensor in model.state_dict().items() for hf_name in hf_names(name)}


def _check_equivalence(
    model: MaskedElmoLanguageModel, hf_model: MaskedElmoModel, config: MaskedElmoConfig
) -> None:
    """The HF model's L + 1 layers equal the plugin's on a padded probe batch, or the export stops."""
    words = [id_ for id_ in range(config.vocab_size) if id_ not in set(config.never_predicted_token_ids)][:6]
    rows = [
        [config.cls_token_id, *words, config.sep_token_id],
        [config.cls_token_id, *words[:2], config.sep_token_id],
    ]
    token_ids = torch.tensor([row + [config.pad_token_id] * (len(rows[0]) - len(row)) for row in rows])
    mask = token_ids != config.pad_token_id
    was_training = model.training
    model.eval()
    with torch.no_grad():
        expected = model.representations(token_ids, mask)
        actual = hf_model(token_ids, attention_mask=mask.long(), output_hidden_states=True).hidden_states
    model.train(was_training)
    difference = max(float((a - e).abs().max()) for a, e in zip(actual, expected))
    if difference > EQUIVALENCE_TOLERANCE:
        raise RuntimeError(
            f"The exported model's representations differ from the plugin's by {difference:.2e} (more than "
            f"{EQUIVALENCE_TOLERANCE}): the export would not be the same model. Please report this."
        )


def _write(
    directory: str,
    hf_model: MaskedElmoForMaskedLM,
    tokenizer: Any,
    record: TrainingRecord,
    sentence_layer: Optional[Union[int, str]] = None,
) -> None:
    # The classes register themselves for their auto class (modeling_masked_elmo.py), so save_pretrained
    # copies the module files and writes the config's and the masked LM's `auto_map` entries; the others
    # come from here.
    hf_model.config.auto_map = dict(AUTO_MAP)
    hf_model.save_pretrained(directory, safe_serialization=True)
    # save_pretrained copied maelmo_plugin/hf/cpu_lstm_recurrence.py, which imports the recurrence from the
    # plugin: the recurrence's own files, joined in one that imports only torch, take its place.
    with open(os.path.join(directory, RECURRENCE_FILE), "w", encoding="utf-8", newline="\n") as recurrence:
        recurrence.write(standalone_source())
    # A copy: the archive's tokenizer is cached and shared in this process.
    exported_tokenizer = copy.deepcopy(tokenizer)
    exported_tokenizer.model_max_length = NO_MAX_LENGTH
    exported_tokenizer.save_pretrained(directory)
    num_parameters = sum(parameter.numel() for parameter in hf_model.parameters())  # shared ones once
    config = hf_model.config
    if sentence_layer is not None:  # the sentence-transformers files
        write_sentence_transformers_files(
            directory, config.hidden_size, config.num_hidden_layers, sentence_layer
        )
    with open(os.path.join(directory, "README.md"), "w", encoding="utf-8") as card:
        card.write(model_card(config, num_parameters, record, VERSION, sentence_layer))
    _check_files(directory, sentence_layer, config.num_hidden_layers)


def _check_files(
    directory: str, sentence_layer: Optional[Union[int, str]] = None, num_layers: int = 2
) -> None:
    names = sorted(os.listdir(directory))
    expected: tuple[str, ...] = EXPECTED_FILES
    if sentence_layer is not None:
        expected += sentence_transformers_files(sentence_layer, num_layers)
    missing = [name for name in expected if not os.path.isfile(os.path.join(directory, name))]
    pickles = [name for name in names if name.endswith(PICKLE_SUFFIXES)]
    if missing or pickles:
        raise RuntimeError(f"The export in {directory} lacks {missing} or holds pickle files {pickles}.")
    with open(os.path.join(directory, RECURRENCE_FILE), encoding="utf-8") as recurrence:
        joined = recurrence.read() == standalone_source()
    if not joined:
        raise RuntimeError(f"{directory}/{RECURRENCE_FILE} is not the plugin's CPU recurrence.")
    with open(os.path.join(directory, "config.json"), encoding="utf-8") as config_file:
        config = json.load(config_file)
    if config.get("tie_word_embeddings") is not True or config.get("auto_map") != AUTO_MAP:
        raise RuntimeError(
            f"{directory}/config.json lacks tie_word_embeddings: true or its auto_map: {config}"
        )


def _training_record(archive: Archive, archive_file: str) -> TrainingRecord:
    """What the archive records of its run: the config's train_data_path, metrics.json, throughput.json."""
    metrics = _archived_json(archive_file, "metrics.json") or {}
    throughput = _archived_json(archive_file, "throughput.json") or []
    perplexity = metrics.get("best_validation_perplexity", metrics.get("validation_perplexity"))
    # The archived weights are the best epoch's: count the updates up to that epoch.
    best_epoch = metrics.get("best_epoch")
    records: list[dict[str, Any]] = [
        record for record in throughput if best_epoch is None or record.get("epoch") == best_epoch
    ] or throughput
    updates = records[-1].get("updates") if records else None
    return TrainingRecord(
        archive=os.path.basename(os.path.normpath(archive_file)),
        train_data_path=archive.config.as_dict().get("train_data_path"),
        updates=None if updates is None else int(updates),
        validation_perplexity=None if perplexity is None else float(perplexity),
    )


def _archived_json(archive_file: str, name: str) -> Optional[Any]:
    """A JSON file at the archive's top level (`include_in_archive`), or None if it has none."""
    if os.path.isdir(archive_file):
        path = os.path.join(archive_file, name)
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as json_file:
            return json.load(json_file)
    with tarfile.open(archive_file) as tar:
        for member_name in (name, "./" + name):
            try:
                member = tar.getmember(member_name)
            except KeyError:
                continue
            extracted = tar.extractfile(member)
            return None if extracted is None else json.load(extracted)
    return None
