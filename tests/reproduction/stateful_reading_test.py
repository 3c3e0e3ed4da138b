"""reproduction.lm_runs.stateful_reading (Table 6's mechanism): `allennlp evaluate` with its overrides
reproduction/runner.py's stateful validation reading (Table 6's mechanism): `allennlp evaluate` with its overrides
reads the text in stateful rows and carries each row's states from window to window, on a tiny Masked ELMo.
"""

import json

import pytest
from allennlp.commands.evaluate import evaluate_from_archive
from allennlp.data import DataLoader, DatasetReader
from allennlp.models.archival import load_archive
from allennlp.training.util import evaluate

from reproduction import lm_runs
from tests import FIXTURES_ROOT

CORPUS = str(FIXTURES_ROOT / "lm" / "corpus.txt")


def perplexity_by_hand(archive, carry: bool) -> float:
    """The archive's model over the overridden validation loader, carrying states or starting each window afresh."""
    model = archive.model
    model._carry_states_in_evaluation = carry
    reader = DatasetReader.from_params(archive.config["dataset_reader"].duplicate())
    loader = DataLoader.from_params(
        params=archive.config["validation_data_loader"].duplicate(), reader=reader, data_path=CORPUS
    )
    loader.index_with(model.vocab)
    return evaluate(model, loader)["perplexity"]


@pytest.mark.parametrize("bidirectional", [True, False])
def test_the_stateful_reading_carries_states_from_window_to_window(
    masked_elmo_archive, tmp_path, bidirectional
):
    overrides = lm_runs.stateful_reading(length=5, batch_size=2, bidirectional=bidirectional)
    archive = load_archive(masked_elmo_archive, overrides=json.dumps(overrides))
    loader = archive.config["validation_data_loader"]
    assert (loader["stateful"], loader["sequence_length"], loader["batch_size"]) == (True, 5, 2)
    assert (
        loader["bidirectional"] is bidirectional and loader["shuffle"] is False
    )  # training's layout, in order

    output = tmp_path / "stateful_metrics.json"
    metrics = evaluate_from_archive(
        masked_elmo_archive, CORPUS, str(output), cmd_overrides=json.dumps(overrides)
    )
    assert json.loads(output.read_text())["perplexity"] == pytest.approx(metrics["perplexity"])
    carried = perplexity_by_hand(archive, carry=True)
    from_zeros = perplexity_by_hand(archive, carry=False)
    # What `allennlp evaluate` reports is the carried reading; on the same windows and masks, zero states differ.
    # By how much depends on the one-epoch model, so on the document order it trained in: 0.04% to 0.3% over
    # the fixture corpus's orders, far above the 1e-6 at which the two readings of the carried states agree.
    assert metrics["perplexity"] == pytest.approx(carried, rel=1e-6)
    assert abs(carried - from_zeros) > 1e-4 * from_zeros
