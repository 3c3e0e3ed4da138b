"""Every config under training_config/ builds (reader, vocabulary, model, trainer) as allennlp train would."""

import glob
import json
import re
from pathlib import Path

import pytest
import torch
from allennlp.commands.train import TrainModel
from allennlp.common import Params
from allennlp.common.util import prepare_environment
from allennlp.models import Model
from allennlp.modules.seq2seq_encoders import LstmSeq2SeqEncoder

from maelmo_plugin.glue.models.glue_classifier import GlueClassifier
from maelmo_plugin.lm.models import ElmoLanguageModel, MaskedElmoLanguageModel
from maelmo_plugin.lm.modules.seq2seq_lm_encoder import Seq2SeqLmEncoder
from maelmo_plugin.lm.modules.transformer_encoder import TransformerEncoder
from maelmo_plugin.lm.token_embedders import (
    MaskedElmoMismatchedEmbedder,
    MaskedElmoTokenEmbedder,
    StatelessElmoTokenEmbedder,
)
from tests import FIXTURES_ROOT, PROJECT_ROOT, run_allennlp, variant_config

# The metrics each pre-training model reports (validation_metric "-perplexity" needs "perplexity").
METRICS = {
    MaskedElmoLanguageModel: {"perplexity", "accuracy"},
    ElmoLanguageModel: {"forward_perplexity", "backward_perplexity", "perplexity"},
}
# The GlueMetric keys of each GLUE task (validation_metric "+glue_score" needs "glue_score").
GLUE_METRICS = {
    "cola": {"mcc", "glue_score"},
    "sst2": {"accuracy", "glue_score"},
    "mrpc": {"accuracy", "f1", "acc_and_f1", "glue_score"},
    "qqp": {"accuracy", "f1", "acc_and_f1", "glue_score"},
    "stsb": {"pearson", "spearman", "corr", "glue_score"},
    "mnli": {"accuracy", "glue_score"},
    "qnli": {"accuracy", "glue_score"},
    "rte": {"accuracy", "glue_score"},
    "wnli": {"accuracy", "glue_score"},
}
EMBEDDERS = {"archive": MaskedElmoTokenEmbedder, "elmo": StatelessElmoTokenEmbedder}

CONFIGS = sorted(glob.glob(str(PROJECT_ROOT / "training_config" / "**" / "*.jsonnet"), recursive=True))
GLUE_CONFIGS = [path for path in CONFIGS if "/glue/" in path]
TAGGING_CONFIGS = [path for path in CONFIGS if "/tagging/" in path]
LM_CONFIGS = [path for path in CONFIGS if path not in GLUE_CONFIGS + TAGGING_CONFIGS]


def config_id(path):
    return path.split("training_config/")[1]


def test_there_are_configs_to_check():
    assert any(path.endswith("training_config/pretrain.jsonnet") for path in LM_CONFIGS)
    glue = sorted(config_id(path) for path in GLUE_CONFIGS)
    assert glue == [f"glue/{task}.jsonnet" for task in sorted(GLUE_METRICS)]
    assert [config_id(path) for path in TAGGING_CONFIGS] == ["tagging/ner.jsonnet"]


def own_data(monkeypatch):
    """The variables of the configs that train on the user's corpus, pointing at the fixtures."""
    corpus = str(FIXTURES_ROOT / "lm" / "corpus.txt")
    monkeypatch.setenv("MAELMO_TRAIN_PATH", corpus)
    monkeypatch.setenv("MAELMO_VALIDATION_PATH", corpus)
    monkeypatch.setenv("MAELMO_VOCAB", str(FIXTURES_ROOT / "lm" / "vocab.txt"))


@pytest.mark.parametrize("config", LM_CONFIGS, ids=config_id)
def test_config_builds(config, tmp_path, monkeypatch, request):
    own_data(monkeypatch)
    if config.endswith("continue.jsonnet"):  # continued pre-training starts from a trained archive
        monkeypatch.setenv("MAELMO_LM_ARCHIVE", request.getfixturevalue("masked_elmo_archive"))
    monkeypatch.chdir(PROJECT_ROOT)  # the sample configs name the sample corpus relative to the repository
    on_gpu = Params.from_file(config).as_dict()["trainer"]["cuda_device"] >= 0
    assert Params.from_file(config)["trainer"]["use_amp"] is on_gpu  # AMP follows the device
    if on_gpu:  # build it on the CPU, as a user's variant file would
        config = variant_config(tmp_path, config, settings={"cuda_device": -1})
    # The fixture corpus is too small for the configs' own rows x windows (the loader checks at build time).
    small = {"trainer.num_epochs": 1, "data_loader.batch_size": 2, "data_loader.sequence_length": 8}
    params = Params.from_file(config, params_overrides=small)
    assert params["trainer"]["use_amp"] is False  # never on CPU
    assert "maelmo_assets" in pop_include_in_archive(params)  # the archive holds the tokenizer
    trainer = TrainModel.from_params(params=params, serialization_dir=str(tmp_path), local_rank=0)
    assert isinstance(trainer.model, Model)
    assert trainer.model.get_metrics().keys() == METRICS[type(trainer.model)]


def test_one_seed_feeds_every_seed(tmp_path):
    config = variant_config(
        tmp_path, PROJECT_ROOT / "training_config" / "lm" / "pretrain_small.jsonnet", settings={"seed": 7}
    )
    params = Params.from_file(config).as_dict()
    seeds = [params[name] for name in ("random_seed", "numpy_seed", "pytorch_seed")]
    assert seeds + [params["model"]["seed"], params["data_loader"]["seed"]] == [7] * 5


@pytest.mark.parametrize("mask_accumulation, passes", [("batched", 1), ("sequential", 3)])
def test_mask_accumulation_sets_the_model_the_loader_and_the_trainer(mask_accumulation, passes, tmp_path):
    config = variant_config(
        tmp_path,
        PROJECT_ROOT / "training_config" / "lm" / "pretrain_small.jsonnet",
        sizes={"num_mask_sets": 3},
        settings={"mask_accumulation": mask_accumulation},
    )
    params = Params.from_file(config).as_dict()
    assert params["model"]["num_mask_sets"] == 3 and params["model"]["mask_accumulation"] == mask_accumulation
    assert params["data_loader"]["mask_accumulation_passes"] == passes
    assert params["trainer"]["num_gradient_accumulation_steps"] == passes


def test_an_unknown_mask_accumulation_is_refused_naming_the_setting(tmp_path):
    config = variant_config(
        tmp_path,
        PROJECT_ROOT / "training_config" / "lm" / "pretrain_small.jsonnet",
        settings={"mask_accumulation": "parallel"},
    )
    with pytest.raises(RuntimeError, match='settings.mask_accumulation is "batched" or "sequential"'):
        Params.from_file(config)


@pytest.mark.parametrize(
    "config", ["pretrain.jsonnet", "lm/pretrain_elmo.jsonnet", "lm/pretrain_small_own_data.jsonnet"]
)
@pytest.mark.parametrize("variable", ["MAELMO_TRAIN_PATH", "MAELMO_VALIDATION_PATH", "MAELMO_VOCAB"])
def test_configs_on_the_users_data_name_a_missing_variable(config, variable, monkeypatch):
    own_data(monkeypatch)
    monkeypatch.delenv(variable)
    with pytest.raises(RuntimeError, match=f"undefined external variable: {variable}"):
        Params.from_file(str(PROJECT_ROOT / "training_config" / config))


def pop_include_in_archive(params: Params) -> list:
    """
    `allennlp train` takes this key and the seeds out before building the rest (they are not TrainModel's);
    it seeds the generators with them.
    """
    prepare_environment(params)
    return params.pop("include_in_archive", None) or []


def build_glue(config, environment, monkeypatch, tmp_path, encoder, overrides=None) -> TrainModel:
    """
    Builds a GLUE config on the fixture GLUE files, a tiny Masked ELMo archive and a tiny ELMo, with `encoder`
    as settings.encoder (a variant file, as users write one).
    """
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    Path(tmp_path).mkdir(parents=True, exist_ok=True)
    config = variant_config(tmp_path, config, settings={"encoder": encoder})
    params = Params.from_file(config, params_overrides={"trainer.num_epochs": 1, **(overrides or {})})
    assert params["trainer"]["use_amp"] is False  # never on CPU
    assert "maelmo_assets" in pop_include_in_archive(params)  # the archive holds what rebuilds the encoder
    return TrainModel.from_params(params=params, serialization_dir=str(tmp_path), local_rank=0)


@pytest.mark.parametrize("finetune", ["ft", "fz"])
@pytest.mark.parametrize("encoder", ["archive", "elmo"])
@pytest.mark.parametrize("config", GLUE_CONFIGS, ids=config_id)
def test_glue_config_builds(config, encoder, finetune, glue_environment, tmp_path, monkeypatch):
    task = config_id(config)[len("glue/") : -len(".jsonnet")]
    built = build_glue(config, glue_environment, monkeypatch, tmp_path, f"{encoder}-{finetune}")
    model = built.model
    assert isinstance(model, GlueClassifier) and model._task.name == task
    assert model.get_metrics().keys() == GLUE_METRICS[task]
    embedder = model._embedder.token_embedder_tokens
    assert isinstance(embedder, EMBEDDERS[encoder])
    language_model = embedder._language_model if encoder == "archive" else embedder._elmo._elmo_lstm
    assert {p.requires_grad for p in language_model.parameters()} == {finetune == "ft"}
    # The dev file (not the train file) is the validation data, read whole (evaluate reads with it too).
    assert built.trainer._validation_data_loader.data_path.endswith(("dev.tsv", "dev_matched.tsv"))
    assert built.trainer._validation_data_loader.reader.max_instances is None


def modules(model):
    return {type(module) for module in model.modules()}


# Table 1 of the paper (Small: RTE, WNLI; Medium: SST-2, CoLA, MRPC; Large: STS-B, QNLI, MNLI, QQP) and the
# learning rates of section 4: task, validation interval, attention, classifier dropout and hidden dim,
# projection, lr.
TABLE_1 = [
    pytest.param("rte", 100, False, 0.4, 128, 128, 3e-4, id="small-rte"),
    pytest.param("cola", 100, False, 0.2, 256, 256, 3e-4, id="medium-cola"),
    # jiant pools the attention's output without projection
    pytest.param("mnli", 1000, True, 0.2, 512, None, 1e-4, id="large-mnli"),
]


@pytest.mark.parametrize("encoder", ["archive", "elmo"])
@pytest.mark.parametrize("task, interval, attention, dropout, hidden, projection, lr", TABLE_1)
def test_glue_configs_have_table_1s_values(
    task,
    interval,
    attention,
    dropout,
    hidden,
    projection,
    lr,
    encoder,
    glue_environment,
    tmp_path,
    monkeypatch,
):
    config = str(PROJECT_ROOT / "training_config" / "glue" / f"{task}.jsonnet")
    built = build_glue(config, glue_environment, monkeypatch, tmp_path, f"{encoder}-ft")
    model, trainer = built.model, built.trainer
    assert (model._pair_attention is not None) == attention
    if projection is None:
        assert model._pooler.projection is None
        # The modelling BiLSTM of jiant's d_hid_attn = 512 per direction.
        assert model._pooler.output_dim == 2 * 512 == model._pair_attention.output_dim
        assert model._pair_attention.dropout.p == dropout  # jiant: the classifier's dropout
    else:
        assert model._pooler.projection.out_features == projection
    first, _, _, classifier_dropout, last = model._classifier
    assert first.out_features == hidden and classifier_dropout.p == dropout
    assert last.out_features == (3 if task == "mnli" else 2)
    assert trainer.data_loader.batches_per_epoch == interval  # an "epoch" is a validation interval
    assert trainer.data_loader.batch_size == 32
    assert {group["lr"] for group in trainer.optimizer.param_groups} == {lr}
    # jiant's sentence encoder: a 2-layer BiLSTM of 1024 units per direction, skip connection, dropout 0.2,
    # and no dropout inside the embedder (jiant's ELMo wrapper leaves it to the sentence encoder).
    lstm = model._encoder._module
    assert isinstance(model._encoder, LstmSeq2SeqEncoder)
    assert (lstm.hidden_size, lstm.num_layers, lstm.bidirectional) == (1024, 2, True)
    assert model._skip_embedding and model._dropout.p == 0.2
    embedder = model._embedder.token_embedder_tokens
    embedder_dropout = embedder._dropout if encoder == "archive" else embedder._elmo._dropout
    assert embedder_dropout.p == 0.0
    assert trainer._grad_norm == 5.0 and trainer._metric_tracker._patience == 5


def test_paper_config_has_the_papers_sizes(monkeypatch):
    own_data(monkeypatch)
    params = Params.from_file(str(PROJECT_ROOT / "training_config" / "pretrain.jsonnet")).as_dict()
    encoder = params["model"]["encoder"]
    assert (encoder["input_dim"], encoder["cells"], encoder["num_layers"]) == (768, 4096, 2)
    assert params["data_loader"]["sequence_length"] == 128
    assert params["model"]["num_mask_sets"] == 4
    assert params["trainer"]["optimizer"] == {"type": "adam", "lr": 0.001}
    assert params["trainer"]["learning_rate_scheduler"] == {"type": "exponential", "gamma": 0.95}
    assert params["trainer"]["num_epochs"] == 10
    assert params["trainer"]["cuda_device"] == 0 and params["trainer"]["use_amp"] is True


def test_bert_star_config_is_bert_base_trained_as_masked_elmo(monkeypatch):
    own_data(monkeypatch)
    bert = Params.from_file(str(PROJECT_ROOT / "training_config" / "lm" / "pretrain_bert.jsonnet")).as_dict()
    masked_elmo = Params.from_file(str(PROJECT_ROOT / "training_config" / "pretrain.jsonnet")).as_dict()
    encoder = bert["model"]["encoder"]
    assert (encoder["input_dim"], encoder["num_layers"], encoder["num_attention_heads"]) == (768, 12, 12)
    assert encoder["intermediate_dim"] == 3072
    # The same data, windows, batches, masks and epochs as Masked ELMo's paper config.
    for key in ("data_loader", "validation_data_loader", "train_data_path", "dataset_reader", "random_seed"):
        assert bert[key] == masked_elmo[key]
    assert bert["model"]["num_mask_sets"] == masked_elmo["model"]["num_mask_sets"] == 4
    assert bert["trainer"]["num_epochs"] == masked_elmo["trainer"]["num_epochs"] == 10
    assert bert["trainer"]["optimizer"]["type"] == "adamw" and bert["trainer"]["optimizer"]["lr"] == 1e-4
    assert bert["trainer"]["learning_rate_scheduler"] == {"type": "linear_with_warmup", "warmup_steps": 10000}


def test_elmo_config_has_elmos_sizes(monkeypatch):
    """ELMo's biLM and bilm-tf's training setup (bin/train_elmo.py), as the header of the config says."""
    own_data(monkeypatch)
    params = Params.from_file(
        str(PROJECT_ROOT / "training_config" / "lm" / "pretrain_elmo.jsonnet")
    ).as_dict()
    assert params["model"]["type"] == "maelmo_elmo_lm"
    encoder = params["model"]["encoder"]
    assert (encoder["input_dim"], encoder["cells"], encoder["num_layers"]) == (512, 4096, 2)
    assert encoder["cell"] == "elmo" and encoder["dropout"] == params["model"]["dropout"] == 0.1
    loader = params["data_loader"]
    assert (loader["type"], loader["batch_size"], loader["sequence_length"]) == ("maelmo_btbptt", 128, 20)
    assert loader["stateful"] is True and loader["bidirectional"] is False
    assert loader["mask_accumulation_passes"] == 1
    # bilm-tf's Adagrad (0.2, accumulator 1.0, clipping at 10) on a loss summed over the 20 unrolled
    # steps equals these settings on our per-position mean loss.
    optimizer = {"type": "adagrad", "lr": 0.2, "initial_accumulator_value": 1 / 400}
    assert params["trainer"]["optimizer"] == optimizer
    assert "learning_rate_scheduler" not in params["trainer"]
    assert params["trainer"]["grad_norm"] == pytest.approx(10.0 / 20)
    assert params["trainer"]["num_epochs"] == 10


def test_glue_random_encoder_is_the_archives_architecture_freshly_initialised(
    glue_environment, tmp_path, monkeypatch
):
    config = str(PROJECT_ROOT / "training_config" / "glue" / "rte.jsonnet")
    trained = build_glue(config, glue_environment, monkeypatch, tmp_path / "a", "archive-ft").model
    random = build_glue(config, glue_environment, monkeypatch, tmp_path / "r", "random-ft").model
    trained_lm = trained._embedder.token_embedder_tokens._language_model.state_dict()
    random_lm = random._embedder.token_embedder_tokens._language_model.state_dict()
    assert trained_lm.keys() == random_lm.keys()
    assert any(not torch.equal(trained_lm[name], random_lm[name]) for name in trained_lm)


@pytest.mark.parametrize("choice", ["archive", "archive-finetuned", ""])
def test_an_unknown_glue_encoder_is_refused_with_the_choices(choice, glue_environment, tmp_path, monkeypatch):
    for name, value in glue_environment.items():
        monkeypatch.setenv(name, value)
    choices = "archive-ft, archive-fz, random-ft, random-fz, elmo-fz, elmo-ft"
    expected = f'settings.encoder is one of {choices}, not "{choice}"'
    config = variant_config(
        tmp_path, PROJECT_ROOT / "training_config" / "glue" / "rte.jsonnet", settings={"encoder": choice}
    )
    with pytest.raises(RuntimeError, match=expected):
        Params.from_file(config)


def test_the_glue_encoder_comes_from_the_config_not_the_environment(glue_environment, tmp_path, monkeypatch):
    for name, value in {**glue_environment, "MAELMO_GLUE_ENCODER": "elmo-fz"}.items():  # the old variable
        monkeypatch.setenv(name, value)
    params = Params.from_file(str(PROJECT_ROOT / "training_config" / "glue" / "rte.jsonnet")).as_dict()
    assert (
        params["model"]["text_field_embedder"]["token_embedders"]["tokens"]["type"]
        == "maelmo_masked_elmo_embedder"
    )


def test_glue_takes_bert_star_through_the_same_embedder(
    bert_lm_archive, glue_environment, tmp_path, monkeypatch
):
    """Table 2's BERT* row comes from the same GLUE files: MAELMO_LM_ARCHIVE names a BERT* archive."""
    environment = {**glue_environment, "MAELMO_LM_ARCHIVE": bert_lm_archive}
    config = str(PROJECT_ROOT / "training_config" / "glue" / "rte.jsonnet")
    tiny_head = {
        "model.encoder": {"type": "lstm", "input_size": 16, "hidden_size": 8, "bidirectional": True},
        "data_loader.batches_per_epoch": 2,
    }
    built = build_glue(config, environment, monkeypatch, tmp_path, "archive-ft", tiny_head)
    embedder = built.model._embedder.token_embedder_tokens
    assert isinstance(embedder, MaskedElmoTokenEmbedder) and isinstance(
        embedder._language_model.encoder, TransformerEncoder
    )
    assert len(embedder._mixes[0].scalar_parameters) == 3  # L + 1 = 3 layers of the fixture BERT*
    before = {name: p.detach().clone() for name, p in embedder._language_model.named_parameters()}
    metrics = built.run()  # two updates on the fixture RTE: BERT* is fine-tuned ("ft")
    assert metrics["training_loss"] > 0 and "validation_glue_score" in metrics
    after = dict(embedder._language_model.named_parameters())
    assert any(not torch.equal(before[name], after[name]) for name in before)


def test_allennlp_train_pretrains_allennlps_own_encoder_then_glue_fine_tunes_it(
    glue_environment, tmp_path, monkeypatch
):
    """`allennlp train` pre-trains the masked LM over `pytorch_transformer`, named by its own type under
    model.encoder; the loss goes down, and the GLUE files fine-tune the archive through the same embedder."""
    run = tmp_path / "lm"
    overrides = json.dumps({"trainer.num_epochs": 6})
    config = str(FIXTURES_ROOT / "lm" / "pytorch_transformer_experiment.jsonnet")
    run_allennlp(["train", config, "-s", str(run), "--include-package", "maelmo_plugin", "-o", overrides], {})
    first = json.loads((run / "metrics_epoch_0.json").read_text())["training_loss"]
    last = json.loads((run / "metrics_epoch_5.json").read_text())["training_loss"]
    assert last < 0.9 * first, (first, last)

    environment = {**glue_environment, "MAELMO_LM_ARCHIVE": str(run / "model.tar.gz")}
    tiny_head = {
        "model.encoder": {"type": "lstm", "input_size": 16, "hidden_size": 8, "bidirectional": True},
        "data_loader.batches_per_epoch": 2,
    }
    glue = str(PROJECT_ROOT / "training_config" / "glue" / "rte.jsonnet")
    built = build_glue(glue, environment, monkeypatch, tmp_path, "archive-ft", tiny_head)
    embedder = built.model._embedder.token_embedder_tokens
    assert isinstance(embedder._language_model.encoder, Seq2SeqLmEncoder)
    assert len(embedder._mixes[0].scalar_parameters) == 2  # h_0 and the encoder's output
    before = {name: p.detach().clone() for name, p in embedder._language_model.named_parameters()}
    metrics = built.run()
    assert metrics["training_loss"] > 0 and "validation_glue_score" in metrics
    after = dict(embedder._language_model.named_parameters())
    assert any(not torch.equal(before[name], after[name]) for name in before)


def test_ner_config_is_the_elmo_recipe_with_masked_elmo(masked_elmo_archive, tmp_path, monkeypatch):
    """allennlp-models' tagging/ner_elmo.jsonnet, with maelmo_masked_elmo_mismatched_embedder in ELMo's place."""
    from allennlp_models.tagging import CrfTagger

    from tests.tagging.ner_test import ner_environment

    for name, value in ner_environment(masked_elmo_archive).items():
        monkeypatch.setenv(name, value)
    config = variant_config(tmp_path, TAGGING_CONFIGS[0], settings={"lm_dim": 16})  # the fixture LM's d
    params = Params.from_file(config)
    assert params["model"]["encoder"]["input_size"] == 16 + 128 + 50  # d, the characters' 128, the words' 50
    reader = params["dataset_reader"].as_dict()
    assert (reader["type"], reader["tag_label"]) == ("maelmo_conll2003", "ner")  # conll2003, compressed too
    assert reader["convert_to_coding_scheme"] == "BIOUL"
    assert "maelmo_assets" in pop_include_in_archive(params)
    built = TrainModel.from_params(params=params, serialization_dir=str(tmp_path), local_rank=0)
    model, trainer = built.model, built.trainer
    assert isinstance(model, CrfTagger) and model.label_encoding == "BIOUL" and model.calculate_span_f1
    assert model.dropout.p == 0.5 and not model.include_start_end_transitions
    embedder = model.text_field_embedder.token_embedder_maelmo
    assert isinstance(embedder, MaskedElmoMismatchedEmbedder) and embedder._pool == "mean"
    assert not any(p.requires_grad for p in embedder._language_model.parameters())  # frozen
    assert embedder._dropout.p == 0.0
    lstm = model.encoder._module
    assert (lstm.hidden_size, lstm.num_layers, lstm.bidirectional, lstm.dropout) == (200, 2, True, 0.5)
    assert {group["lr"] for group in trainer.optimizer.param_groups} == {0.001}
    assert trainer._grad_norm == 5.0 and trainer._metric_tracker._patience == 25
    assert trainer._num_epochs == 75 and trainer.data_loader.batch_size == 64
    # L2 (alpha 0.1) on the mixing weights, and on nothing else: the recipe's regex matches them.
    with torch.no_grad():
        for weight in embedder._mixes[0].scalar_parameters:  # the L + 1 = 3 layers
            weight.fill_(1.0)
    assert model.get_regularization_penalty().item() == pytest.approx(0.1 * 3)
    assert trainer._use_amp is False


HEADER_ENTRY = re.compile(r"^//   (\w+)\s{2,}(\S+)\s{2,}(\S.*)$")


def all_types(value) -> set:
    """Every "type" value anywhere in an expanded config."""
    if isinstance(value, dict):
        own = {value["type"]} if isinstance(value.get("type"), str) else set()
        return own.union(*map(all_types, value.values()))
    if isinstance(value, list):
        return set().union(*map(all_types, value))
    return set()


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_each_config_header_names_the_registered_types_it_builds(config, glue_environment, monkeypatch):
    """A config's header lists `role  type  file` for what it builds; the list is complete and true."""
    from tests.tagging.ner_test import ner_environment

    own_data(monkeypatch)
    for name, value in {**glue_environment, **ner_environment(glue_environment["MAELMO_LM_ARCHIVE"])}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(PROJECT_ROOT)
    header = [
        HEADER_ENTRY.match(line) for line in Path(config).read_text().splitlines() if line.startswith("//")
    ]
    named = {match.group(2): match.group(3) for match in header if match}
    built = {name for name in all_types(Params.from_file(config).as_dict()) if name.startswith("maelmo_")}
    assert built == {name for name in named if name.startswith("maelmo_")}, f"{config}: header vs config"
    for name, source in named.items():
        if source.startswith("maelmo_plugin/"):
            assert f'register("{name}"' in (PROJECT_ROOT / source).read_text(), f"{name} is not in {source}"
