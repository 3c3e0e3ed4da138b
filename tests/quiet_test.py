"""`maelmo_plugin._quiet`: AllenNLP's start-up records are DEBUG records once the plugin is imported."""

import io
import logging

import pytest
import torch
from allennlp.common import Params

from maelmo_plugin import _quiet


@pytest.fixture
def captured():
    """The text that loggers at `level` write, through a handler at NOTSET as `logging.basicConfig`'s."""
    stream, handler = io.StringIO(), logging.StreamHandler()
    handler.setStream(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    loggers = [logging.getLogger(name) for name in _quiet.START_UP_RECORDS]
    saved = [(logger.level, logger.propagate, logger.disabled) for logger in loggers]
    # Another test (or AllenNLP) may have left logging.disable() set, which drops DEBUG records everywhere.
    disabled = logging.root.manager.disable
    logging.disable(logging.NOTSET)

    def capture(level: int) -> io.StringIO:
        for logger in loggers:
            # AllenNlpTestCase.setup_method disables allennlp.common.params' logger for the tests after it.
            logger.disabled = False
            logger.setLevel(level)
            logger.propagate = False  # only this handler, not pytest's
            logger.addHandler(handler)
        return stream

    yield capture
    for logger, (level, propagate, was_disabled) in zip(loggers, saved):
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
        logger.disabled = was_disabled
    logging.disable(disabled)


def read_parameters() -> None:
    Params({"trainer": {"num_epochs": 3}}).pop("trainer").pop_int("num_epochs")


def test_parameters_are_not_logged_at_info(captured):
    stream = captured(logging.INFO)
    read_parameters()
    logging.getLogger("allennlp.common.plugins").info("Plugin %s available", "maelmo_plugin")
    logging.getLogger("allennlp.models.archival").info("loading archive file %s", "model.tar.gz")
    assert stream.getvalue() == ""


def test_other_records_of_the_same_loggers_stay(captured):
    stream = captured(logging.INFO)
    logging.getLogger("allennlp.models.archival").info("archiving weights and vocabulary to %s", "m.tar.gz")
    logging.getLogger("allennlp.common.plugins").error("Plugin %s could not be loaded", "x")
    assert stream.getvalue().splitlines() == [
        "INFO allennlp.models.archival archiving weights and vocabulary to m.tar.gz",
        "ERROR allennlp.common.plugins Plugin x could not be loaded",
    ]


def test_the_first_batchs_tensors_and_the_patience_warning_are_not_shown(captured):
    """The Quickstart printed the first batch's tensors and a warning about early stopping (issue 71)."""
    stream = captured(logging.INFO)
    console = logging.getLogger("allennlp.training.callbacks.console_logger")
    console.info("Batch inputs")
    console.info("%s (Shape: %s)\n%s", "batch_input/tokens", "2 x 3", torch.zeros(2, 3))
    console.info('Field : "%s" : %s', "batch_input/x", 1)
    trainer = logging.getLogger("allennlp.training.gradient_descent_trainer")
    trainer.warning("You provided a validation dataset but patience was set to None, meaning that ...")
    trainer.warning("Metrics with names beginning with 'x' will not be logged")
    assert stream.getvalue().splitlines() == [
        "WARNING allennlp.training.gradient_descent_trainer Metrics with names beginning with 'x' will not be logged"
    ]


def test_parameters_are_debug_records_shown_at_debug(captured):
    """As with ALLENNLP_DEBUG=1, which sets the root logger to DEBUG."""
    stream = captured(logging.DEBUG)
    read_parameters()
    assert stream.getvalue().splitlines() == ["DEBUG allennlp.common.params trainer.num_epochs = 3"]


def test_the_filters_are_installed_once():
    _quiet.quiet_start_up()
    _quiet.quiet_start_up()
    for name in _quiet.START_UP_RECORDS:
        filters = logging.getLogger(name).filters
        assert sum(isinstance(f, _quiet.StartUpRecordsAsDebug) for f in filters) == 1


def test_the_trainers_list_of_parameter_names_is_a_debug_record(caplog):
    # AllenNLP's trainer lists every parameter's name at INFO as it starts (29 lines for a small Masked ELMo).
    from allennlp.common import util

    with caplog.at_level(logging.INFO, logger="allennlp.common.util"):
        util.log_frozen_and_tunable_parameter_names(torch.nn.Linear(2, 2))
    assert not caplog.records
    with caplog.at_level(logging.DEBUG, logger="allennlp.common.util"):
        util.log_frozen_and_tunable_parameter_names(torch.nn.Linear(2, 2))
    assert [record.getMessage() for record in caplog.records][-2:] == ["weight", "bias"]
    assert {record.levelname for record in caplog.records} == {"DEBUG"}


def test_allennlps_transformer_builds_without_torchs_nested_tensor_notice():
    """torch's notice that AllenNLP's `pytorch_transformer` uses no nested tensors reached users (issue 70)."""
    import subprocess
    import sys

    build = (
        "import maelmo_plugin\n"
        "from allennlp.modules.seq2seq_encoders import PytorchTransformer\n"
        "PytorchTransformer(input_dim=8, num_layers=1, num_attention_heads=2)\n"
    )
    result = subprocess.run(
        [sys.executable, "-W", "default", "-c", build], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "nested" not in result.stderr
    # The notice is torch's, and still given without the plugin: the filter is what keeps it out.
    without = subprocess.run(
        [sys.executable, "-W", "default", "-c", build.replace("import maelmo_plugin\n", "")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert without.returncode == 0 and "enable_nested_tensor is True" in without.stderr
