"""One test per shim in maelmo_plugin/compat.py; each fails if its shim is removed."""

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.data.token_indexers import PretrainedTransformerIndexer
from allennlp.data.tokenizers import PretrainedTransformerTokenizer
from allennlp.models import archival
from allennlp.modules.token_embedders import PretrainedTransformerEmbedder
from allennlp.training.learning_rate_schedulers import LearningRateScheduler
from allennlp.training.optimizers import Optimizer

from tests import PROJECT_ROOT


def test_checkpoints_holding_numpy_scalars_load_with_weights_only(tmp_path):
    """allennlp train -r reloads training_state_*.th, where metrics such as Spearman are numpy scalars."""
    path = tmp_path / "training_state.th"
    torch.save({"metric_tracker": {"best": np.float64(0.25), "count": np.int64(3)}}, path)
    state = torch.load(path, weights_only=True)
    assert state["metric_tracker"]["best"] == 0.25 and state["metric_tracker"]["count"] == 3


def test_reduce_on_plateau_scheduler_builds_and_reduces_the_learning_rate():
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=1.0)
    scheduler = LearningRateScheduler.from_params(
        optimizer=optimizer, params=Params({"type": "reduce_on_plateau", "patience": 0, "factor": 0.5})
    )
    for _ in range(3):
        scheduler.step(metric=1.0)  # no improvement after the first epoch
    assert optimizer.param_groups[0]["lr"] == 0.25


def write_bert_directory(directory: Path) -> Path:
    """A local BERT tokenizer and a 1-layer BertModel, as `save_pretrained` writes them (no hub)."""
    # AllenNLP finds the special tokens' positions by encoding "a" and "b", which must be distinct pieces.
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "the", "cat", "sat", "##s"]
    (directory / "vocab.txt").parent.mkdir(parents=True, exist_ok=True)
    (directory / "vocab.txt").write_text("\n".join(words) + "\n")
    transformers.BertTokenizerFast(vocab_file=str(directory / "vocab.txt")).save_pretrained(directory)
    config = transformers.BertConfig(
        vocab_size=len(words), hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16
    )
    transformers.BertModel(config).save_pretrained(directory)
    return directory


def test_allennlp_pretrained_transformer_tokenizer_loads_a_tokenizer_under_the_pinned_transformers(tmp_path):
    """transformers>=4.44 refuses the add_special_tokens init kwarg that AllenNLP always passes."""
    directory = str(write_bert_directory(tmp_path / "bert"))
    with_special = PretrainedTransformerTokenizer(directory)
    without_special = PretrainedTransformerTokenizer(directory, add_special_tokens=False)
    assert [t.text for t in with_special.tokenize("the cats sat")] == [
        "[CLS]",
        "the",
        "cat",
        "##s",
        "sat",
        "[SEP]",
    ]
    assert [t.text for t in without_special.tokenize("the cats sat")] == ["the", "cat", "##s", "sat"]
    vocabulary = Vocabulary.from_pretrained_transformer(directory, namespace="bert")
    assert vocabulary.get_token_index("##s", "bert") == 10


@pytest.mark.filterwarnings("ignore:This implementation of AdamW is deprecated:FutureWarning")
def test_allennlp_transformer_embedder_and_huggingface_optimizers_work_under_the_pinned_transformers(
    tmp_path,
):
    """The cap below transformers 4.50: AllenNLP subclasses transformers.AdamW, which 4.50 removed."""
    directory = str(write_bert_directory(tmp_path / "bert"))
    tokenizer = PretrainedTransformerTokenizer(directory)
    indexer = PretrainedTransformerIndexer(directory)
    vocabulary = Vocabulary()
    indexed = indexer.tokens_to_indices(tokenizer.tokenize("the cats sat"), vocabulary)
    assert indexed["token_ids"] == [2, 7, 8, 10, 9, 3]
    embedder = PretrainedTransformerEmbedder(directory)
    token_ids = torch.tensor([indexed["token_ids"]])
    for name in ("huggingface_adamw", "huggingface_adafactor"):
        optimizer = Optimizer.from_params(
            model_parameters=list(embedder.named_parameters()), params=Params({"type": name})
        )
        before = [parameter.detach().clone() for parameter in embedder.parameters()]
        vectors = embedder(token_ids, torch.ones_like(token_ids, dtype=torch.bool))
        assert vectors.shape == (1, 6, 8)
        vectors.pow(2).sum().backward()
        optimizer.step()
        assert any(not torch.equal(old, new) for old, new in zip(before, embedder.parameters()))


def test_importing_the_plugin_is_silent_and_makes_no_network_call():
    probe = (
        "import socket\n"
        "def refuse(*args, **kwargs):\n"
        "    raise SystemExit('network call at import: %r' % (args,))\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "import maelmo_plugin\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONWARNINGS"}
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and result.stdout == ""


def test_importing_the_plugin_leaves_the_environment_alone():
    code = "import os, maelmo_plugin; print(sorted(k for k in os.environ if k.startswith('MAELMO')))"
    environment = {key: value for key, value in os.environ.items() if not key.startswith("MAELMO")}
    result = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def write_tar_gz(path: Path, members: list) -> Path:
    """`members`: (name, bytes) for a file, (name, "->target") for a symbolic link."""
    with tarfile.open(path, "w:gz") as archive:
        for name, content in members:
            info = tarfile.TarInfo(name)
            if isinstance(content, str):
                info.type, info.linkname = tarfile.SYMTYPE, content[2:]
                archive.addfile(info)
            else:
                info.size = len(content)
                archive.addfile(info, io.BytesIO(content))
    return path


@pytest.fixture
def temp_root(tmp_path, monkeypatch) -> Path:
    """Where archives are extracted (as tempfile.mkdtemp() subdirectories), so escapes can be looked for."""
    root = tmp_path / "temp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def test_archive_members_that_would_land_outside_the_extraction_directory_are_refused(tmp_path, temp_root):
    escapes = {
        "dotdot": [("../escape.txt", b"x")],
        # A link out, then a file written through it.
        "symlink": [("out", "->" + str(tmp_path)), ("out/escape.txt", b"x")],
    }
    for name, members in escapes.items():
        path = write_tar_gz(tmp_path / f"{name}.tar.gz", members)
        message = rf"{name}\.tar\.gz holds a member that would be extracted outside"
        with pytest.raises(ConfigurationError, match=message):
            archival.load_archive(str(path))
    assert not (temp_root / "escape.txt").exists() and not (tmp_path / "escape.txt").exists()
    assert list(temp_root.iterdir()) == []  # nor is the extraction directory left behind


def test_an_absolute_member_name_is_extracted_inside_the_directory(tmp_path, temp_root):
    target = tmp_path / "absolute.txt"
    path = write_tar_gz(tmp_path / "absolute.tar.gz", [("config.json", b"{}"), (str(target), b"x")])
    with archival.extracted_archive(str(path)) as directory:
        assert (Path(directory) / str(target).lstrip("/")).read_bytes() == b"x"
    assert not target.exists()


def damaged(data: bytes) -> dict:
    middle = len(data) // 2
    return {
        "not_gzip": b"<html>Not Found</html>",  # e.g. an error page saved under the archive's name
        "truncated": data[:middle],
        "tail_cut": data[:-4],  # only the gzip trailer is missing
        "flipped": data[:middle]
        + bytes(byte ^ 0xFF for byte in data[middle : middle + 8])
        + data[middle + 8 :],
    }


def test_a_damaged_or_truncated_archive_is_a_configuration_error_naming_it(tmp_path, temp_root):
    # Incompressible content, so that the damage falls inside the member rather than in padding.
    good = write_tar_gz(tmp_path / "good.tar.gz", [("weights.th", os.urandom(100_000))]).read_bytes()
    for name, data in damaged(good).items():
        path = tmp_path / f"{name}.tar.gz"
        path.write_bytes(data)
        with pytest.raises(ConfigurationError, match=rf"{name}\.tar\.gz is corrupt or truncated .*best\.th"):
            archival.load_archive(str(path))
    assert list(temp_root.iterdir()) == []


def test_a_predict_run_that_fails_leaves_an_existing_output_file_as_it_was(fill_mask_archive, tmp_path):
    import json
    from unittest import mock

    from allennlp.commands import main

    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text('{"sentence": "A cat sleeps."}\n{"text": "a wrong field"}\n', encoding="utf-8")
    output = tmp_path / "vectors.jsonl"
    output.write_text("precious\n", encoding="utf-8")
    argv = ["allennlp", "predict", fill_mask_archive, str(inputs), "--predictor", "maelmo_representations"]
    argv += ["--output-file", str(output), "--silent", "--batch-size", "1"]
    with mock.patch.object(sys, "argv", argv):
        # The first prediction is written before the second line fails: AllenNLP truncated the output at start.
        with pytest.raises(SystemExit):
            main(prog="allennlp")
    assert output.read_text(encoding="utf-8") == "precious\n"
    assert sorted(os.listdir(tmp_path)) == ["inputs.jsonl", "vectors.jsonl"]
    inputs.write_text('{"sentence": "A cat sleeps."}\n', encoding="utf-8")
    with mock.patch.object(sys, "argv", argv):
        main(prog="allennlp")
    assert json.loads(output.read_text(encoding="utf-8"))["wordpieces"] == [
        "[CLS]",
        "A",
        "cat",
        "sleeps",
        ".",
        "[SEP]",
    ]
    assert sorted(os.listdir(tmp_path)) == ["inputs.jsonl", "vectors.jsonl"]


@pytest.mark.parametrize(
    "lines, message",
    [
        (
            ['{"sentence": "A cat sleeps."}', "", '{"sentence": "A dog"'],
            "line 3: not valid JSON (Expecting ',' delimiter at column 21); each line is one JSON object, e.g. "
            '{"sentence": "The cat sleeps."}.',
        ),
        (
            ['{"sentence": "A cat sleeps."}', '{"text": "a wrong field"}'],
            'line 2 must have exactly one of the fields "sentence" (a string) or "tokens" (a list of words); it '
            "has the fields ['text'].",
        ),
        (
            ['{"tokens": "A cat"}'],
            "line 1: the field \"tokens\" must be a list of words (strings), got 'A cat'.",
        ),
    ],
)
def test_a_bad_predict_line_is_named_in_one_line_without_a_traceback(
    fill_mask_archive, tmp_path, capsys, lines, message, predictor="maelmo_representations"
):
    from unittest import mock

    from allennlp.commands import main

    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = ["allennlp", "predict", fill_mask_archive, str(inputs), "--predictor", predictor]
    argv += ["--output-file", str(tmp_path / "out.jsonl"), "--silent"]
    with mock.patch.object(sys, "argv", argv), pytest.raises(SystemExit) as exit_info:
        main(prog="allennlp")
    error = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in error
    assert error.strip().splitlines()[-1] == f"allennlp predict: error: {inputs}, {message}"
    assert sorted(os.listdir(tmp_path)) == ["inputs.jsonl"]


def test_a_fill_mask_line_without_mask_is_named_in_one_line(fill_mask_archive, tmp_path, capsys):
    test_a_bad_predict_line_is_named_in_one_line_without_a_traceback(
        fill_mask_archive,
        tmp_path,
        capsys,
        ['{"sentence": "A [MASK] cat."}', '{"sentence": "A cat."}'],
        'line 2, field "sentence" has no [MASK]: write [MASK] where a word-piece is to be predicted.',
        predictor="maelmo_fill_mask",
    )


def test_a_refused_run_leaves_a_folder_it_did_not_create_as_it_was(tmp_path):
    from allennlp.commands.train import train_model_from_file

    run = tmp_path / "run"
    run.mkdir()
    (run / "notes.txt").write_text("the user's notes")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model": {"type": "maelmo_no_such_model"}}))
    with pytest.raises(ConfigurationError):
        train_model_from_file(str(config), str(run))
    assert [path.name for path in run.iterdir()] == ["notes.txt"]


def test_a_predictor_refusing_its_arguments_is_one_line(fill_mask_archive, tmp_path, capsys):
    from unittest import mock

    from allennlp.commands import main

    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text('{"sentence": "A cat sleeps."}\n', encoding="utf-8")
    argv = ["allennlp", "predict", fill_mask_archive, str(inputs), "--predictor", "maelmo_representations"]
    argv += ["--predictor-args", '{"layer": 99}', "--output-file", str(tmp_path / "out.jsonl"), "--silent"]
    with mock.patch.object(sys, "argv", argv), pytest.raises(SystemExit) as exit_info:
        main(prog="allennlp")
    error = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in error
    assert (
        error.strip().splitlines()[-1].startswith("allennlp predict: error: layer must be null (all layers)")
    )
    assert sorted(os.listdir(tmp_path)) == ["inputs.jsonl"]


def test_a_config_written_anywhere_imports_a_packaged_config_by_name(tmp_path):
    """`(import "lm/pretrain_small.jsonnet")` from a folder of the user's: before, Jsonnet found no such file."""
    from allennlp.common import Params

    variant = tmp_path / "elsewhere" / "small_variant.jsonnet"
    variant.parent.mkdir()
    variant.write_text('(import "lm/pretrain_small.jsonnet") + { sizes+:: { epochs: 3 } }\n')
    params = Params.from_file(str(variant))
    packaged = Params.from_file(str(PROJECT_ROOT / "training_config" / "lm" / "pretrain_small.jsonnet"))
    assert params["trainer"]["num_epochs"] == 3 != packaged["trainer"]["num_epochs"]
    assert params.as_dict()["model"] == packaged.as_dict()["model"]
    # A file beside the importing one still comes first.
    (variant.parent / "lm").mkdir()
    (variant.parent / "lm" / "pretrain_small.jsonnet").write_text('{ "mine": true }\n')
    assert Params.from_file(str(variant)).as_dict() == {"mine": True}


@pytest.mark.parametrize(
    "config, overrides, message",
    [
        ("[1, 2]", "", r"c.jsonnet is not a config: it evaluates to a list, where a config is an object"),
        ('{"a": 1}', "[1]", r"-o '\[1\]' is not a JSON object: give the keys to override"),
        ('{"a": 1}', "{trainer: ", r"-o '\{trainer: ' is not a JSON object \(STATIC ERROR"),
    ],
)
def test_a_config_or_overrides_that_are_no_object_are_one_error(tmp_path, config, overrides, message):
    """Before: AttributeError tracebacks (and a run folder left by `train`), or -o's fault blamed on the file."""
    from allennlp.common import Params

    (tmp_path / "c.jsonnet").write_text(config)
    with pytest.raises(ConfigurationError, match=message):
        Params.from_file(str(tmp_path / "c.jsonnet"), overrides)
