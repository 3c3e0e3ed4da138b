"""
Archives that travel: every kind of `model.tar.gz` the plugin trains is used, by the commands and APIs users
run, once where it was trained and again after everything but the archives is gone (the vocabulary file, the
corpus, the GLUE data, the language model a GLUE model was fine-tuned from, ELMo's options and hdf5 files,
the run directories), from another working directory. The outputs must not change.
"""

import json
import shutil
from pathlib import Path
from unittest import mock

import h5py
import numpy as np
import pytest
import torch
from allennlp.commands.train import train_model_from_file
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive

from maelmo_plugin.api import MaskedElmo
from maelmo_plugin.common.archive_assets import ASSETS_DIR, asset_path, holds_trained_weights, save_asset
from maelmo_plugin.common.wordpiece import WordpieceTokenizer, load_wordpiece_tokenizer
from maelmo_plugin.lm.token_embedders.masked_elmo_embedder import MaskedElmoTokenEmbedder
from maelmo_plugin.lm.token_embedders.stateless_elmo import write_weight_skeleton
from tests import FIXTURES_ROOT, run_allennlp_in_process
from tests.fixtures.elmo import write_tiny_elmo

SENTENCES = ["The quick brown fox jumps over the lazy dog.", "A cat sleeps.", "The king lived in Berlin."]
GLUE_RUNS = {
    # name: (encoder, fine-tuned, extra overrides)
    "rte": ("archive", True, {}),
    "rte_random": ("archive", False, {"model.text_field_embedder.token_embedders.tokens.reinitialize": True}),
    "rte_elmo": ("elmo", False, {}),
}


def cli(*arguments: str) -> None:
    """An `allennlp` command in this process (`run_allennlp_in_process`), naming the plugin as a user may."""
    run_allennlp_in_process(*arguments, "--include-package", "maelmo_plugin")


def train(root: Path, checkout: Path) -> dict[str, Path]:
    """Trains every kind of archive from the files in `checkout`, into `root/runs`; returns the archives."""
    vocab, corpus, rte = (str(checkout / name) for name in ("vocab.txt", "corpus.txt", "RTE/train.tsv"))
    runs = root / "runs"
    archives = {}
    lm_overrides = {
        "vocabulary.vocab": vocab,
        "dataset_reader.tokenizer.vocab": vocab,
        "train_data_path": corpus,
        "validation_data_path": corpus,
        "trainer.num_epochs": 1,
    }
    for name, config in (("lm", "experiment.jsonnet"), ("elmo_lm", "elmo_experiment.jsonnet")):
        train_model_from_file(str(FIXTURES_ROOT / "lm" / config), str(runs / name), json.dumps(lm_overrides))
        archives[name] = runs / name / "model.tar.gz"
    options, weights = write_tiny_elmo(checkout / "elmo")
    environment = {
        "MAELMO_LM_ARCHIVE": str(archives["lm"]),
        "MAELMO_ELMO_OPTIONS": options,
        "MAELMO_ELMO_WEIGHTS": weights,
    }
    with mock.patch.dict("os.environ", environment):
        for name, (encoder, finetune, extra) in GLUE_RUNS.items():
            config = root / f"{name}.jsonnet"
            common = FIXTURES_ROOT / "glue_models" / "common.libsonnet"
            config.write_text(
                f'(import "{common}").experiment("rte", "RTE", "{encoder}", finetune={str(finetune).lower()})'
            )
            overrides = {"train_data_path": rte, "validation_data_path": rte, **extra}
            if encoder == "archive":
                overrides.update(
                    {
                        "dataset_reader.tokenizer.vocab": vocab,
                        "validation_dataset_reader.tokenizer.vocab": vocab,
                    }
                )
            train_model_from_file(str(config), str(runs / name), json.dumps(overrides))
            archives[name] = runs / name / "model.tar.gz"
    return archives


def uses(archives: dict[str, Path], data: Path, out: Path) -> dict:
    """What users do with the archives, as comparable values."""
    out.mkdir()
    results = {}
    for name in GLUE_RUNS:
        cli(
            "evaluate",
            str(archives[name]),
            str(data / "rte.tsv"),
            "--output-file",
            str(out / f"{name}.json"),
            "--predictions-output-file",
            str(out / f"{name}.jsonl"),
        )
        results[f"evaluate {name}"] = json.loads((out / f"{name}.json").read_text())
        results[f"evaluate {name} predictions"] = (out / f"{name}.jsonl").read_text()
    cli(
        "predict",
        str(archives["rte"]),
        str(data / "test.tsv"),
        "--use-dataset-reader",
        "--predictor",
        "maelmo_glue",
        "--output-file",
        str(out / "RTE.tsv"),
        "--silent",
    )
    results["predict glue"] = (out / "RTE.tsv").read_text()
    cli("evaluate", str(archives["lm"]), str(data / "corpus.txt"), "--output-file", str(out / "lm.json"))
    results["evaluate lm"] = json.loads((out / "lm.json").read_text())
    for name, predictor, inputs in (
        ("lm", "maelmo_representations", "sentences.jsonl"),
        ("lm", "maelmo_fill_mask", "masked.jsonl"),
        ("elmo_lm", "maelmo_representations", "sentences.jsonl"),
    ):
        output = out / f"{name}-{predictor}.jsonl"
        cli(
            "predict",
            str(archives[name]),
            str(data / inputs),
            "--predictor",
            predictor,
            "--output-file",
            str(output),
            "--silent",
        )
        results[f"predict {name} {predictor}"] = [
            json.loads(line) for line in output.read_text().splitlines()
        ]
    cli("maelmo-embed", str(archives["lm"]), str(data / "sentences.txt"), str(out / "vectors.hdf5"))
    with h5py.File(out / "vectors.hdf5", "r") as hdf5:
        results["maelmo-embed"] = [hdf5[str(index)][()].tolist() for index in range(len(SENTENCES))]
    embedder = MaskedElmoTokenEmbedder(str(archives["lm"]))
    with torch.no_grad():
        results["maelmo_masked_elmo_embedder"] = embedder.eval()(
            torch.tensor([[2, 10, 11, 12, 3], [2, 13, 3, 0, 0]])
        ).tolist()
    api = MaskedElmo.from_archive(str(archives["lm"]))
    results["api embed"] = [vectors.tolist() for vectors in api.embed(SENTENCES, layer="mix", pool="mean")]
    results["api fill_mask"] = api.fill_mask("The king lived in [MASK].", top_k=3)
    return results


def assert_same(actual, expected, where: str) -> None:
    """Equal structure and strings, numbers within 1e-6 (the same weights through the same kernels)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), where
        for key in expected:
            assert_same(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), where
        for index, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, f"{where}[{index}]")
    elif isinstance(expected, float):
        assert actual == pytest.approx(expected, rel=0, abs=1e-6), where
    else:
        assert actual == expected, where


@pytest.fixture(scope="module")
def before_and_after(tmp_path_factory):
    root = tmp_path_factory.mktemp("trained_elsewhere")
    checkout = root / "checkout"  # what the training machine held: vocabulary, corpus, GLUE data, ELMo
    checkout.mkdir()
    for name in ("vocab.txt", "corpus.txt"):
        shutil.copy(FIXTURES_ROOT / "lm" / name, checkout / name)
    shutil.copytree(FIXTURES_ROOT / "glue" / "RTE", checkout / "RTE")
    data = root / "data"  # the user's own inputs, which stay
    data.mkdir()
    shutil.copy(FIXTURES_ROOT / "glue" / "RTE" / "train.tsv", data / "rte.tsv")
    shutil.copy(FIXTURES_ROOT / "glue" / "RTE" / "test.tsv", data / "test.tsv")
    shutil.copy(FIXTURES_ROOT / "lm" / "corpus.txt", data / "corpus.txt")
    (data / "sentences.txt").write_text("\n".join(SENTENCES) + "\n")
    (data / "sentences.jsonl").write_text("".join(json.dumps({"sentence": s}) + "\n" for s in SENTENCES))
    (data / "masked.jsonl").write_text(json.dumps({"sentence": "The [MASK] sleeps in Berlin."}) + "\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)  # nothing resolves against the project's checkout
        archives = train(root, checkout)
        before = uses(archives, data, root / "before")
        moved = root / "archives"
        moved.mkdir()
        for name, archive in archives.items():
            archives[name] = Path(shutil.move(archive, moved / f"{name}.tar.gz"))
        shutil.rmtree(root / "runs")
        shutil.rmtree(checkout)
        load_wordpiece_tokenizer.cache_clear()  # as in a new process
        patch.chdir(moved)
        for name in ("MAELMO_LM_ARCHIVE", "MAELMO_ELMO_OPTIONS", "MAELMO_ELMO_WEIGHTS", "MAELMO_VOCAB"):
            patch.setenv(name, str(root / "gone"))
        after = uses(archives, data, root / "after")
    return before, after


def test_every_use_gives_the_same_outputs_after_everything_but_the_archives_is_gone(before_and_after):
    before, after = before_and_after
    assert before.keys() == after.keys()
    for use in before:
        assert_same(after[use], before[use], use)
    # The comparisons are not vacuous: every GLUE dev row was scored and every sentence embedded.
    assert len(before["maelmo-embed"]) == len(SENTENCES)
    assert before["evaluate rte"]["accuracy"] in (0.0, 0.5, 1.0)


def test_tokenizer_is_read_back_from_the_archived_copy(tmp_path):
    vocab = tmp_path / "vocab.txt"
    shutil.copy(FIXTURES_ROOT / "lm" / "vocab.txt", vocab)
    run = tmp_path / "run"
    run.mkdir()
    trained = WordpieceTokenizer(str(vocab), serialization_dir=str(run))
    copy = Path(asset_path(str(run), "tokenizer", str(vocab)))
    assert (copy / "tokenizer.json").exists() and (copy / "vocab.txt").exists()
    vocab.unlink()
    load_wordpiece_tokenizer.cache_clear()
    loaded = WordpieceTokenizer(str(vocab), serialization_dir=str(run))
    text = "The unbelievable king lived in Berlin."
    assert [t.text_id for t in loaded.tokenize(text)] == [t.text_id for t in trained.tokenize(text)]
    assert loaded._to_params() == trained._to_params()  # config.json keeps naming the original vocabulary


def test_an_archive_without_the_copies_names_the_missing_setting(tmp_path):
    vocab = tmp_path / "vocab.txt"
    shutil.copy(FIXTURES_ROOT / "lm" / "vocab.txt", vocab)
    overrides = {
        "include_in_archive": None,
        "vocabulary.vocab": str(vocab),
        "dataset_reader.tokenizer.vocab": str(vocab),
        "trainer.num_epochs": 1,
    }
    train_model_from_file(
        str(FIXTURES_ROOT / "lm" / "experiment.jsonnet"), str(tmp_path / "run"), json.dumps(overrides)
    )
    log = (tmp_path / "run" / "out.log").read_text()
    assert (
        "include_in_archive lacks 'maelmo_assets'" in log and '"include_in_archive": ["maelmo_assets"]' in log
    )
    vocab.unlink()
    load_wordpiece_tokenizer.cache_clear()  # as in a new process
    with pytest.raises(ConfigurationError, match=r"holds no copy of its tokenizer.*include_in_archive"):
        load_archive(str(tmp_path / "run" / "model.tar.gz"))


def test_glue_encoder_reads_pretrained_weights_until_the_run_holds_weights(masked_elmo_archive, tmp_path):
    """A resumed run without a checkpoint yet must still start from the pre-trained language model."""
    run = tmp_path / "run"
    run.mkdir()
    pretrained = load_archive(masked_elmo_archive).model._embedding.weight
    first = MaskedElmoTokenEmbedder(masked_elmo_archive, serialization_dir=str(run))
    assert (Path(asset_path(str(run), "language_model", masked_elmo_archive)) / "config.json").exists()
    again = MaskedElmoTokenEmbedder(masked_elmo_archive, serialization_dir=str(run))  # -r, no checkpoint
    for embedder in (first, again):
        assert torch.equal(embedder._language_model._embedding.weight, pretrained)
    (run / "model_state_e0_b3.th").touch()  # a checkpoint: its weights will replace the encoder's
    resumed = MaskedElmoTokenEmbedder(masked_elmo_archive, serialization_dir=str(run))
    assert not torch.equal(resumed._language_model._embedding.weight, pretrained)
    gone = str(tmp_path / "gone.tar.gz")
    with pytest.raises(ConfigurationError, match="does not exist"):
        MaskedElmoTokenEmbedder(gone, serialization_dir=str(run))


def test_holds_trained_weights(tmp_path):
    assert not holds_trained_weights(None) and not holds_trained_weights(str(tmp_path))
    for name in ("weights.th", "best.th", "model_state_e2_b0.th"):
        directory = tmp_path / name.split(".")[0]
        directory.mkdir()
        (directory / name).touch()
        assert holds_trained_weights(str(directory)), name


def test_weight_skeleton_has_the_tree_and_shapes_and_reads_as_zeros(tmp_path):
    _, weights = write_tiny_elmo(tmp_path / "elmo")
    skeleton = tmp_path / "skeleton.hdf5"
    write_weight_skeleton(weights, str(skeleton))
    assert skeleton.stat().st_size < Path(weights).stat().st_size
    shapes = {}
    with h5py.File(weights, "r") as real:
        real.visititems(
            lambda name, node: shapes.update({name: node.shape}) if isinstance(node, h5py.Dataset) else None
        )
    with h5py.File(skeleton, "r") as copy:
        for name, shape in shapes.items():
            assert copy[name].shape == shape and not np.any(copy[name][()]), name
    assert len(shapes) == 1 + 4 + 4 + 2 + 12  # char_embed, CNN, highway, projection, 2 x 2 LSTM cells x 3


def test_save_asset_keeps_a_finished_copy_and_survives_a_read_only_directory(tmp_path):
    save_asset(str(tmp_path), "thing", "a", lambda d: (Path(d) / "x").write_text("1"))
    save_asset(str(tmp_path), "thing", "a", lambda d: (Path(d) / "x").write_text("2"))
    assert (Path(asset_path(str(tmp_path), "thing", "a")) / "x").read_text() == "1"
    assert sorted(p.name for p in (tmp_path / ASSETS_DIR).iterdir()) == [
        Path(asset_path(str(tmp_path), "thing", "a")).name
    ]
    read_only = tmp_path / "read_only"
    read_only.mkdir()
    read_only.chmod(0o500)
    try:
        save_asset(str(read_only), "thing", "a", lambda d: (Path(d) / "x").write_text("1"))  # logs, no raise
    finally:
        read_only.chmod(0o700)
