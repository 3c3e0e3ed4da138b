"""`maelmo_plugin/commands/allennlp_commands.py`: what the plugin changes in AllenNLP's own commands."""

import json

from tests import FIXTURES_ROOT, run_allennlp_in_process


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
