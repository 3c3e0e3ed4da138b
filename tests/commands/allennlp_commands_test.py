"""`maelmo_plugin/commands/allennlp_commands.py`: what the plugin changes in AllenNLP's own commands."""

import json
import os

import pytest

from tests import FIXTURES_ROOT, file_tree, run_allennlp_in_process


def test_evaluate_prints_its_metrics(masked_elmo_archive, capsys, tmp_path):
    """AllenNLP 2.10 logged them only with --output-file: `allennlp evaluate ARCHIVE DATA` showed no number."""
    run_allennlp_in_process("evaluate", masked_elmo_archive, str(FIXTURES_ROOT / "lm" / "corpus.txt"))
    printed = json.loads(capsys.readouterr().out)
    assert printed["perplexity"] > 1 and printed["loss"] > 0
    # With --output-file they go to the file, as before, and are not printed again.
    output = tmp_path / "metrics.json"
    run_allennlp_in_process(
        "evaluate",
        masked_elmo_archive,
        str(FIXTURES_ROOT / "lm" / "corpus.txt"),
        "--output-file",
        str(output),
    )
    assert capsys.readouterr().out == "" and json.loads(output.read_text())["perplexity"] > 1


@pytest.mark.parametrize("target", ["the input", "a folder of the user's", "a link to a user's file"])
def test_predict_refuses_an_output_that_would_lose_a_users_file(fill_mask_archive, tmp_path, capsys, target):
    """Before: the input replaced by its predictions, an IsADirectoryError traceback, the user's link replaced."""
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"sentence": "The dog sleeps."}\n')
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "notes.txt").write_text("mine")
    os.symlink(tmp_path / "thesis" / "notes.txt", tmp_path / "link.jsonl")
    output = {"the input": inputs, "a folder of the user's": tmp_path / "thesis"}.get(
        target, tmp_path / "link.jsonl"
    )
    before = file_tree(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        run_allennlp_in_process(
            "predict",
            fill_mask_archive,
            str(inputs),
            "--predictor",
            "maelmo_representations",
            "--output-file",
            str(output),
            "--silent",
        )
    error = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in error
    assert error.strip().splitlines()[-1].startswith("allennlp predict: error: ")
    assert file_tree(tmp_path) == before and os.path.islink(tmp_path / "link.jsonl")


@pytest.mark.parametrize("data", ["nothere/valid.txt", "nothere/*.txt", "{corpus},nothere.txt"])
def test_evaluate_names_missing_data_as_the_command_lines(masked_elmo_archive, capsys, tmp_path, data):
    """Before: the reader's error sent the user to "the data paths of the config", which named no such path."""
    data = data.format(corpus=FIXTURES_ROOT / "lm" / "corpus.txt")
    given = data if data.startswith("/") else str(tmp_path / data)
    with pytest.raises(SystemExit) as exit_info:
        run_allennlp_in_process("evaluate", masked_elmo_archive, given)
    captured = capsys.readouterr()
    assert exit_info.value.code == 2 and "Traceback" not in captured.err and captured.out == ""
    last = captured.err.strip().splitlines()[-1]
    assert last.startswith("allennlp evaluate: error: the evaluation data ") and "(INPUT_FILE)" in last
    assert "of the config" not in last


def test_evaluate_checks_no_file_of_json_data_or_an_address():
    from maelmo_plugin.commands.allennlp_commands import missing_evaluation_data

    assert missing_evaluation_data('{"sentence": "The dog sleeps."}') == ""
    assert missing_evaluation_data("https://example.org/dev.tsv") == ""
    assert missing_evaluation_data(str(FIXTURES_ROOT / "lm")) == ""  # a folder: the reader reads its files
    assert "matches no file" in missing_evaluation_data(str(FIXTURES_ROOT / "lm" / "*.nothing"))
