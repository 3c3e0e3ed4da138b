"""
Silences third-party noise that says nothing to a user of this plugin: deprecation warnings, and the INFO
records with which AllenNLP opens every command (`START_UP_RECORDS`, made DEBUG records).

Imported first by `maelmo_plugin/__init__.py`, before anything imports allennlp: allennlp imports fairscale,
whose `torch.cuda.amp.custom_fwd` and `torch.jit.script` uses warn on torch 2.x, and AllenNLP's trainer
calls the deprecated `torch.cuda.amp.autocast` every epoch. Only these exact sources are filtered.
"""

import logging
import warnings
from typing import Optional

import maelmo_startup

# What the installed .pth does at interpreter start, for a process that started without it (`python -S`, the
# package on PYTHONPATH): in-process users import this package before allennlp.
maelmo_startup.install()
warnings.filterwarnings(
    "ignore", category=FutureWarning, module=r"allennlp\.training\.gradient_descent_trainer"
)
warnings.filterwarnings("ignore", message=r"`torch\.cuda\.amp\.autocast", category=FutureWarning)
# torch says once per process that oneDNN has no projected LSTM and that it uses its native kernel: that is
# the kernel we choose on CPU (docs/performance.md), so the notice only alarms users.
warnings.filterwarnings(
    "ignore", message="LSTM with projections is not supported with oneDNN", category=UserWarning
)
# AllenNLP's `pytorch_transformer` builds torch's encoder without `batch_first`, and torch then says, for every
# model built, that it will not use nested tensors: a speed note about AllenNLP's code, not the user's config.
warnings.filterwarnings(
    "ignore",
    message=r"enable_nested_tensor is True, but self\.use_nested_tensor is False",
    category=UserWarning,
)

# Records that every command logs at INFO while it starts, and that tell a user nothing to act on: each
# parameter AllenNLP reads while it builds a model or reader (about 50 lines per archive loaded), that a
# plugin was found, torch's version, and where an archive is unpacked. They become DEBUG records: shown
# with ALLENNLP_DEBUG=1 (or ALLENNLP_LOG_LEVEL=DEBUG), and otherwise left out of the terminal and of a
# training run's out.log alike (its config.json holds every parameter). Per logger: the messages'
# beginnings, or None for all of its INFO records.
START_UP_RECORDS: dict[str, Optional[tuple[str, ...]]] = {
    "allennlp.common.params": None,
    "allennlp.common.plugins": ("Plugin ",),
    "allennlp.common.checks": ("Pytorch version",),
    "allennlp.models.archival": ("loading archive file", "removing temporary unarchived model dir"),
    "allennlp.data.vocabulary": ("Loading token dictionary",),
    # The first batch's tensors, printed whole by AllenNLP's default console callback.
    "allennlp.training.callbacks.console_logger": ("Batch inputs", "%s (Shape: %s)", "Field : "),
    # A warning about a choice the configs make: pre-training has no early stopping (design.md).
    "allennlp.training.gradient_descent_trainer": ("You provided a validation dataset but patience",),
}


class StartUpRecordsAsDebug(logging.Filter):
    """
    A logger filter that makes the INFO records whose message starts with one of `prefixes` (all of them if
    `prefixes` is None) DEBUG records, and drops them unless their logger is enabled for DEBUG. A WARNING record
    is made DEBUG only when `prefixes` names it.
    """

    def __init__(self, prefixes: Optional[tuple[str, ...]]) -> None:
        super().__init__()
        self.prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno not in (logging.INFO, logging.WARNING):
            return True
        if record.levelno == logging.WARNING and self.prefixes is None:
            return True
        if self.prefixes is not None and not str(record.msg).startswith(self.prefixes):
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def quiet_start_up() -> None:
    """Installs `StartUpRecordsAsDebug` on the loggers of `START_UP_RECORDS` (once, however often called)."""
    for name, prefixes in START_UP_RECORDS.items():
        logger = logging.getLogger(name)
        if not any(isinstance(existing, StartUpRecordsAsDebug) for existing in logger.filters):
            logger.addFilter(StartUpRecordsAsDebug(prefixes))


quiet_start_up()
