"""The configs travel with the package: a packaged name resolves to its file, and the small configs find
their sample corpus from any working directory."""

import os
from pathlib import Path

import pytest
from allennlp.common import Params

from maelmo_declarations import packaged_configs
from maelmo_declarations.packaged_configs import (
    config_root,
    packaged_names,
    resolve_config_argument,
    resolve_in_command_line,
)


def test_a_packaged_name_resolves_to_its_file_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    resolved = Path(resolve_config_argument("lm/pretrain_small"))
    assert resolved == config_root() / "lm" / "pretrain_small.jsonnet"
    assert Path(resolve_config_argument("lm/pretrain_small.jsonnet")) == resolved
    assert {"lm/pretrain_small", "glue/rte", "pretrain", "tagging/ner"} <= set(packaged_names())


def test_an_existing_file_wins_over_a_packaged_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lm").mkdir()
    (tmp_path / "lm" / "pretrain_small").write_text("{}")
    assert resolve_config_argument("lm/pretrain_small") == "lm/pretrain_small"
    assert (
        resolve_config_argument("https://example.org/config.jsonnet") == "https://example.org/config.jsonnet"
    )


@pytest.mark.parametrize(
    "name", ["lm/pretrain_smal", "../README.md", "lm/../../setup.py", "/no/such/config.jsonnet", ""]
)
def test_a_name_that_is_no_file_and_no_packaged_config_is_refused_naming_them(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="no packaged config of that name .*lm/pretrain_small"):
        resolve_config_argument(name)


def test_a_link_out_of_the_configs_folder_names_nothing(tmp_path, monkeypatch):
    root = tmp_path / "training_config"
    (root / "lm").mkdir(parents=True)
    (root / "lm" / "pretrain_common.libsonnet").write_text("{}")
    (tmp_path / "secret.jsonnet").write_text("{}")
    os.symlink(tmp_path / "secret.jsonnet", root / "lm" / "leak.jsonnet")
    monkeypatch.setattr(packaged_configs, "_PACKAGE", tmp_path / "maelmo_plugin")
    monkeypatch.chdir(tmp_path / "training_config")
    assert config_root() == root
    assert packaged_configs.packaged_config("lm/leak") is None


def test_only_the_config_argument_of_train_and_maelmo_config_is_resolved(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    small = str(config_root() / "lm" / "pretrain_small.jsonnet")
    argv = [
        "train",
        "-s",
        "lm/pretrain_small",
        "-o",
        "{}",
        "-f",
        "lm/pretrain_small",
        "--include-package",
        "x",
    ]
    assert resolve_in_command_line(argv) == argv[:6] + [small] + argv[7:]
    assert resolve_in_command_line(["maelmo-config", "lm/pretrain_small"]) == ["maelmo-config", small]
    assert resolve_in_command_line(["evaluate", "lm/pretrain_small"]) == ["evaluate", "lm/pretrain_small"]


@pytest.mark.parametrize("name", ["lm/pretrain_small", "lm/pretrain_elmo_small", "lm/pretrain_bert_small"])
def test_the_small_configs_find_their_sample_corpus_from_any_directory(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    params = Params.from_file(resolve_config_argument(name)).as_dict(quiet=True)
    for key in ("train_data_path", "validation_data_path"):
        assert Path(params[key]).is_file(), params[key]
    assert Path(params["vocabulary"]["vocab"]).is_file()
    # Given relative to the working directory, as a user in the checkout types it, the paths work there too.
    monkeypatch.chdir(config_root().parent)
    relative = Params.from_file(os.path.relpath(resolve_config_argument(name))).as_dict(quiet=True)
    assert Path(relative["train_data_path"]).is_file() and not Path(relative["train_data_path"]).is_absolute()


def test_the_listing_piped_into_head_ends_quietly():
    """`python -m maelmo_declarations.packaged_configs | head -1` ended in a BrokenPipeError traceback (issue 71)."""
    import subprocess
    import sys

    result = subprocess.run(
        f"'{sys.executable}' -m maelmo_declarations.packaged_configs | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        executable="/bin/bash",
    )
    assert result.stdout.startswith("# ") and result.stdout.count("\n") == 1
    assert result.stderr == ""


def test_a_folder_given_as_the_config_is_refused(tmp_path):
    """Jsonnet aborted the process (`basic_filebuf::underflow ... Is a directory`, exit -6) on a folder."""
    with pytest.raises(ValueError, match="is a directory: give a config file"):
        packaged_configs.resolve_config_argument(str(tmp_path))
