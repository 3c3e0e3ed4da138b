"""
The README's command lines and Python block, as written: the configs they name exist and build, the Python
block runs, and `allennlp predict` prints nothing but what a user needs.
"""

import argparse
import json
import re
import shlex

import h5py
import numpy
import pytest
from allennlp.commands.train import Train
from allennlp.common import Params

from tests import PROJECT_ROOT, run_allennlp

README = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
DOCS = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]


def commands(text: str, start: str) -> list[str]:
    """The shell commands of `text`'s bash blocks that contain `start`, continuation lines joined."""
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)
    joined = [line for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    return [line.strip() for line in joined if start in line and not line.lstrip().startswith("#")]


def test_every_config_the_docs_train_exists():
    """A config path given to `allennlp train` in the README or docs/ is a file (user-written variants aside)."""
    variants = {"rte_elmo.jsonnet", "runs/gpu_seed1.jsonnet", "runs/ner_gpu.jsonnet"}  # echo'd just before
    named = {
        (doc.name, config)
        for doc in DOCS
        for config in re.findall(r"allennlp train (\S+\.jsonnet)", doc.read_text(encoding="utf-8"))
    }
    assert ("README.md", "training_config/pretrain.jsonnet") in named
    missing = [(doc, config) for doc, config in named if config not in variants]
    missing = [(doc, config) for doc, config in missing if not (PROJECT_ROOT / config).is_file()]
    assert not missing, f"the docs train configs that do not exist: {missing}"


def test_the_readmes_pretraining_command_resolves_as_written(monkeypatch):
    """`allennlp train training_config/pretrain.jsonnet ...`: its arguments parse, its config evaluates with
    the variables the README sets, and it is the paper's (test_config_builds builds it)."""
    (command,) = commands(README, "allennlp train training_config/pretrain.jsonnet")
    words = shlex.split(command)
    start = next(index for index, word in enumerate(words) if word.endswith("allennlp"))
    for assignment in words[:start]:
        name, value = assignment.split("=", 1)
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(PROJECT_ROOT)
    parser = argparse.ArgumentParser(prog="allennlp")
    Train().add_subparser(parser.add_subparsers()).add_argument("--include-package", action="append")
    arguments = parser.parse_args(words[start + 1 :])
    assert (arguments.param_path, arguments.serialization_dir) == (
        "training_config/pretrain.jsonnet",
        "runs/pretrain",
    )
    params = Params.from_file(arguments.param_path).as_dict()
    assert params["train_data_path"] == "corpus/train/*.txt"  # the README's variable
    encoder = params["model"]["encoder"]
    assert (encoder["input_dim"], encoder["cells"], encoder["num_layers"]) == (768, 4096, 2)


def test_the_readmes_python_block_runs(masked_elmo_archive, tmp_path, monkeypatch):
    block = re.search(r"From Python:\n\n```python\n(.*?)```", README, flags=re.DOTALL).group(1)
    assert block.startswith("from maelmo_plugin.api import MaskedElmo\n")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sentences.txt").write_text("A cat sleeps.\nA dog eats a fish.\n", encoding="utf-8")
    namespace: dict = {}
    exec(block.replace("runs/sample/model.tar.gz", masked_elmo_archive), namespace)
    assert [vectors.shape for vectors in namespace["vectors"]] == [(3, 16)]  # A, sentence, .
    assert numpy.isfinite(namespace["vectors"][0]).all()
    with h5py.File(tmp_path / "vectors.hdf5", "r") as vectors:  # embed_file: a dataset per line, the index
        assert sorted(vectors) == ["0", "1", "sentence_to_index"] and vectors["0"].shape == (6, 16)


@pytest.mark.slow
@pytest.mark.parametrize("predictor", ["maelmo_representations", "maelmo_fill_mask"])
def test_the_readmes_predict_commands_print_only_what_a_user_needs(predictor, fill_mask_archive, tmp_path):
    """As the README writes them: the predictions go to the output file, and the terminal gets no
    prediction and none of AllenNLP's start-up records."""
    (command,) = commands(README, f"--predictor {predictor}")
    inputs = {
        "in.jsonl": [{"sentence": "The cat sleeps on the house."}, {"sentence": "A dog eats a fish."}],
        "masked.jsonl": [{"sentence": "The king lived in [MASK]."}],
    }
    for name, lines in inputs.items():
        (tmp_path / name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    paths = {"runs/sample/model.tar.gz": fill_mask_archive}
    paths.update({name: str(tmp_path / name) for name in [*inputs, "out.jsonl", "filled.jsonl"]})
    words = [paths.get(word, word) for word in shlex.split(command)]
    result = run_allennlp(words[1:], {})
    assert result.stdout == ""
    assert "allennlp.common.params" not in result.stderr and "prediction:" not in result.stderr
    output = words[words.index("--output-file") + 1]
    lines = [json.loads(line) for line in open(output, encoding="utf-8")]
    if predictor == "maelmo_fill_mask":
        assert lines[0]["masks"][0]["wordpieces"][0] == "Berlin"
    else:
        assert [len(line["vectors"]) for line in lines] == [7, 6]  # the words, pooled
