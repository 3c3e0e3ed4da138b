"""
Compatibility shims that let AllenNLP 2.10.1 (written for torch<1.13 and transformers<4.21) run on torch 2.x,
and on Python 3.13+ with transformers 4.47-4.49.

Every shim is idempotent, is applied once by `apply_all()` when `maelmo_plugin` is imported, and has a
test in `tests/compat_test.py` that fails without it. Keep this module the only place for such patches.
"""

import gzip
import json
import logging
import os
import pickle
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from allennlp.common.checks import ConfigurationError

from maelmo_declarations.packaged_configs import config_root

logger = logging.getLogger(__name__)

# What tarfile and gzip raise on a file that is not a gzipped tar, or that ends early or was damaged.
_CORRUPT_ARCHIVE_ERRORS = (tarfile.ReadError, EOFError, zlib.error, gzip.BadGzipFile)
# The attribute that marks a shim's replacement function, so that applying the shim again does nothing.
PATCHED = "_maelmo_patched"


def _is_patched(function: object) -> bool:
    return bool(getattr(function, PATCHED, False))


def _patch(owner: Any, name: str, replacement: Callable[..., Any], mark: bool = True) -> None:
    """
    Puts `replacement` in place of `owner.name`, a class's method or a module's function, marked with
    `PATCHED` unless `mark` is False. Through setattr: replacing methods is what this module is for, where
    mypy rightly refuses a method assigned by mistake.
    """
    if mark:
        setattr(replacement, PATCHED, True)
    setattr(owner, name, replacement)


def allow_numpy_scalars_in_checkpoints() -> None:
    """
    torch>=2.6 loads `training_state_*.th` with `weights_only=True`, which rejects the numpy scalars that
    some AllenNLP metrics (e.g. `SpearmanCorrelation`) put into the metric tracker, so `allennlp train -r`
    fails with "Unsupported global: numpy._core.multiarray.scalar". Allow-listing numpy's scalar types keeps
    the safe loader (no arbitrary code) and makes those checkpoints loadable.
    """
    core = getattr(np, "_core", None) or np.core
    torch.serialization.add_safe_globals(
        [
            core.multiarray.scalar,
            np.dtype,
            np.dtypes.Float64DType,
            np.dtypes.Float32DType,
            np.dtypes.Int64DType,
            np.dtypes.Int32DType,
        ]
    )


def patch_reduce_on_plateau() -> None:
    """
    torch 2.x removed `ReduceLROnPlateau(verbose=...)`, which AllenNLP's `reduce_on_plateau` scheduler
    always passes. Re-define the wrapper's constructor without forwarding `verbose` (kept in the signature
    so existing configs still parse).
    """
    from typing import Union

    from allennlp.training.learning_rate_schedulers import pytorch_lr_schedulers
    from allennlp.training.learning_rate_schedulers.learning_rate_scheduler import (
        _PyTorchLearningRateSchedulerWithMetricsWrapper,
    )
    from allennlp.training.optimizers import Optimizer

    scheduler_class = pytorch_lr_schedulers.ReduceOnPlateauLearningRateScheduler
    if _is_patched(scheduler_class.__init__):
        return

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        verbose: bool = False,
        threshold_mode: str = "rel",
        threshold: float = 1e-4,
        cooldown: int = 0,
        min_lr: Union[float, list[float]] = 0,
        eps: float = 1e-8,
    ) -> None:
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer=optimizer,
            mode=mode,  # type: ignore[arg-type]  # why: torch's Literal; FromParams reads AllenNLP's str here, torch checks it
            factor=factor,
            patience=patience,
            threshold_mode=threshold_mode,  # type: ignore[arg-type]  # why: torch's Literal, as for mode
            threshold=threshold,
            cooldown=cooldown,
            min_lr=min_lr,
            eps=eps,
        )
        _PyTorchLearningRateSchedulerWithMetricsWrapper.__init__(self, scheduler)  # type: ignore[arg-type]  # why: allennlp annotates torch 1's _LRScheduler, which torch 2's ReduceLROnPlateau does not subclass

    _patch(scheduler_class, "__init__", __init__)  # FromParams reads the annotations above


def patch_get_tokenizer() -> None:
    """
    From transformers 4.44 on, a tokenizer's constructor rejects keyword arguments named like its methods
    ("add_special_tokens conflicts with the method add_special_tokens in BertTokenizer"), and AllenNLP's
    `PretrainedTransformerTokenizer` always loads its tokenizer with `add_special_tokens=True/False`.
    The tokenizer never used that argument: AllenNLP passes `add_special_tokens` to every `encode` call,
    so dropping it before `AutoTokenizer.from_pretrained` changes nothing but the error.
    """
    from allennlp.common import cached_transformers

    if _is_patched(cached_transformers.get_tokenizer):
        return
    get_tokenizer = cached_transformers.get_tokenizer

    def get_tokenizer_without_init_flag(model_name: str, **kwargs):
        kwargs.pop("add_special_tokens", None)
        return get_tokenizer(model_name, **kwargs)

    _patch(cached_transformers, "get_tokenizer", get_tokenizer_without_init_flag)


# Each extraction directory's archive, so that an error about a file inside names the archive the user gave.
_EXTRACTED_FROM: dict[str, str] = {}


@contextmanager
def _extracted_archive(resolved_archive_file: str, cleanup: bool = True) -> Iterator[str]:
    """AllenNLP's `extracted_archive`, with the checks of `extract_model_archive`."""
    tempdir = tempfile.mkdtemp()
    _EXTRACTED_FROM[tempdir] = resolved_archive_file
    logger.debug("extracting archive file %s to temp dir %s", resolved_archive_file, tempdir)
    try:
        extract_model_archive(resolved_archive_file, tempdir)
    except BaseException:
        # Also when cleanup=False: load_archive only removes a directory that it was handed.
        shutil.rmtree(tempdir, ignore_errors=True)
        raise
    try:
        yield tempdir
    finally:
        if cleanup:
            shutil.rmtree(tempdir, ignore_errors=True)


def extract_model_archive(archive_file: str, directory: str) -> None:
    """
    Extracts a `model.tar.gz` with tarfile's "data" filter, which refuses members that would land outside
    `directory` (`../` names, links pointing out), extracts absolute names inside it, and refuses device
    files: an archive from elsewhere cannot write anywhere else. A damaged or truncated archive, which
    tarfile and gzip report deep in their own code, becomes a `ConfigurationError` naming the file.
    """
    try:
        with tarfile.open(archive_file, "r:gz") as archive:
            archive.extractall(directory, filter="data")
            # tarfile stops at the end-of-archive blocks; gzip checks its CRC and length only at the end
            # of the stream, so without this a damaged byte would only show up as broken weights later.
            while archive.fileobj.read(1 << 20):
                pass
    except _CORRUPT_ARCHIVE_ERRORS as error:
        raise ConfigurationError(
            f"The model archive {archive_file} is corrupt or truncated ({type(error).__name__}: {error}). "
            f"Copy it again from where it was written, or re-archive it from the serialization directory's "
            f"best.th with `allennlp.models.archival.archive_model(serialization_dir)`."
        ) from error
    except tarfile.FilterError as error:
        raise ConfigurationError(
            f"The model archive {archive_file} holds a member that would be extracted outside its directory "
            f"({error}); it was not written by `allennlp train`, and is refused. Use an archive from a "
            f"source you trust."
        ) from error
    from maelmo_plugin.common.integrity import verify_extracted

    problem = verify_extracted(directory, archive_file)  # config.json, and each member's sha256
    if problem is not None:
        raise ConfigurationError(problem)


def check_archive_extraction() -> None:
    """
    AllenNLP's `extracted_archive` calls `tarfile.extractall` without a filter, so a crafted archive can
    write outside the temporary directory (Python 3.11 does not filter by default), and a damaged one fails
    with a bare `EOFError` or `zlib.error` from deep inside tarfile. `load_archive` (and so `allennlp
    evaluate`/`predict`, `Predictor.from_path`) looks the function up in its module, where it is replaced.
    """
    from allennlp.models import archival

    archival.extracted_archive = _extracted_archive


class UnreadableWeights(ConfigurationError, pickle.UnpicklingError):
    """A weights file torch's `weights_only` loader refuses or cannot read, named with its archive."""


def name_unreadable_weights() -> None:
    """
    A weights file that torch's `weights_only` loader refuses (a pickle that would run code) or cannot read
    (not a checkpoint, damaged) fails in `Model.load` with torch's own error, which names neither the archive
    nor the file. AllenNLP reads it with `allennlp.nn.util.read_state_dict`, looked up in its module, where it
    is replaced: the error names `ARCHIVE's weights.th` and what to do, and is still an `UnpicklingError`.
    Nothing in the file runs either way.
    """
    from allennlp.nn import util

    if _is_patched(util.read_state_dict):
        return
    original = util.read_state_dict

    def read_state_dict(path, *args, **kwargs):
        try:
            return original(path, *args, **kwargs)
        except (pickle.UnpicklingError, EOFError, RuntimeError) as error:
            directory, name = os.path.split(os.fspath(path))
            where = (
                f"{_EXTRACTED_FROM[directory]}'s {name}" if directory in _EXTRACTED_FROM else os.fspath(path)
            )
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise UnreadableWeights(
                f"{where} is not a weights file that torch loads safely ({first_line}): it was damaged, or was "
                f"not written by `allennlp train` (a pickle that would run code is refused, and nothing in it "
                f"ran). Use an archive from a source you trust, or re-archive the run's best.th."
            ) from None

    _patch(util, "read_state_dict", read_state_dict)


def list_parameter_names_at_debug() -> None:
    """AllenNLP's trainer lists each parameter's name at INFO as it starts: DEBUG records, as `_quiet.py`'s."""
    from allennlp.common import util

    def log_frozen_and_tunable_parameter_names(model: torch.nn.Module) -> None:
        frozen, tunable = util.get_frozen_and_tunable_parameter_names(model)
        for heading, names in (("Frozen (without gradient)", frozen), ("Tunable (with gradient)", tunable)):
            util.logger.debug("The following parameters are %s:", heading)
            for name in names:
                util.logger.debug(name)

    _patch(util, "log_frozen_and_tunable_parameter_names", log_frozen_and_tunable_parameter_names)


def import_packaged_configs_by_name() -> None:
    """
    A config written anywhere imports a packaged one by its name, `(import "lm/pretrain_small.jsonnet") + {...}`:
    Jsonnet looks for an import beside the importing file first, then in the packaged configs' folder (the
    wheel's copy, or the checkout's `training_config/`: `maelmo_declarations/packaged_configs.py`), a library
    path AllenNLP's `Params.from_file` does not give it. Without it, a variant worked only from a file at the
    checkout's root.
    """
    from allennlp.common import params

    if _is_patched(params.evaluate_file):
        return
    original = params.evaluate_file

    def evaluate_file(filename: str, **kwargs: Any) -> str:
        root = config_root()
        if root is not None and "jpathdir" not in kwargs:
            kwargs["jpathdir"] = [str(root)]
        return original(filename, **kwargs)

    _patch(params, "evaluate_file", evaluate_file)


def _check_overrides(overrides: str) -> None:
    """`-o`: a JSON (or Jsonnet) object; anything else was a traceback, or blamed on the config file."""
    from allennlp.common.params import evaluate_snippet

    try:
        value = json.loads(evaluate_snippet("", overrides))
    except (RuntimeError, json.JSONDecodeError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ConfigurationError(f"-o {overrides!r} is not a JSON object ({first}).") from None
    if not isinstance(value, dict):
        raise ConfigurationError(
            f"-o {overrides!r} is not a JSON object: give the keys to override, e.g. '{{\"trainer.num_epochs\": 2}}'."
        )


def _top_level_kind(path: str) -> str:
    from allennlp.common.params import evaluate_file

    try:
        return f"a {type(json.loads(evaluate_file(path))).__name__}"
    except (RuntimeError, ValueError):
        return "something else"


def name_config_errors() -> None:
    """
    An archive's `config.json` that Jsonnet cannot read was its `RuntimeError` traceback, naming a deleted
    temporary folder (`/tmp/tmp...`); a folder given as an archive without its `config.json` was a `FileNotFoundError`
    traceback. Both are a `ConfigurationError` (one line on the command line) naming the archive or the folder.
    A training config's own Jsonnet error is left as it is: `maelmo-config` shows it whole. A config that reads
    is then upgraded from 0.1.0's names where it has them (`maelmo_plugin/lm/config_upgrade.py`).
    """
    from allennlp.common import Params

    if _is_patched(Params.from_file):
        return
    original = Params.from_file.__func__  # type: ignore[attr-defined]  # why: the classmethod's function

    def from_file(cls: type, params_file: Any, *args: Any, **kwargs: Any) -> Any:
        path = os.fspath(params_file)
        archive = _EXTRACTED_FROM.get(os.path.dirname(path))
        shown = f"{archive}'s {os.path.basename(path)}" if archive else path
        overrides = args[0] if args else kwargs.get("params_overrides", "")
        if isinstance(overrides, str) and overrides.strip():
            _check_overrides(overrides)
        try:
            params = original(cls, params_file, *args, **kwargs)
        except AttributeError:  # AllenNLP's `with_overrides` on a file that is not an object
            raise ConfigurationError(
                f"{shown} is not a config: it evaluates to {_top_level_kind(path)}, where a config is an object "
                f"({{...}} of the model, the data, the trainer)."
            ) from None
        except FileNotFoundError:
            if os.path.basename(path) != "config.json" or not os.path.isdir(os.path.dirname(path) or "."):
                raise
            raise ConfigurationError(
                f"{os.path.dirname(path) or '.'} holds no config.json: give a model.tar.gz, the serialization "
                f"directory of a training run, or a maelmo-export directory."
            ) from None
        except (RuntimeError, json.JSONDecodeError) as error:  # Jsonnet's errors name the file and line
            if not archive and os.path.basename(path) != "config.json":
                raise  # a training config of the user's: Jsonnet's own error names the field (maelmo-config)
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            if archive:
                first = first.replace(os.path.dirname(path), archive)
            raise ConfigurationError(f"{shown} is not a config Jsonnet can read ({first}).") from None
        if not isinstance(params.params, dict):
            raise ConfigurationError(
                f"{shown} is not a config: it evaluates to {_top_level_kind(path)}, where a config is an object "
                f"({{...}} of the model, the data, the trainer)."
            )
        # A config of 0.1.0 (an archive's, a GLUE archive's copy of its language model) is read as today's.
        from maelmo_plugin.lm.config_upgrade import upgrade_and_warn

        upgrade_and_warn(params.params, shown)
        return params

    setattr(from_file, PATCHED, True)
    # why the ignore: a classmethod, where _patch expects the function itself.
    _patch(Params, "from_file", classmethod(from_file), mark=False)  # type: ignore[arg-type]


def apply_all() -> None:
    allow_numpy_scalars_in_checkpoints()
    import_packaged_configs_by_name()
    name_config_errors()
    patch_reduce_on_plateau()
    patch_get_tokenizer()
    check_archive_extraction()
    # Imported here: importing a sub-package registers its classes, which happens after the shims.
    from maelmo_plugin.commands import allennlp_commands
    from maelmo_plugin.common import integrity
    from maelmo_plugin.training import run_folder

    integrity.sign_archives()
    run_folder.guard_force()
    run_folder.remove_the_folder_of_a_refused_run()
    allennlp_commands.write_predictions_aside()
    allennlp_commands.name_bad_predict_lines()
    allennlp_commands.print_evaluation_metrics()
    name_unreadable_weights()
    list_parameter_names_at_debug()
