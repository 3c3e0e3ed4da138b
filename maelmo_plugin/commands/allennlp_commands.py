"""
What the plugin changes in AllenNLP's own commands, applied with the shims on `import maelmo_plugin`
(`maelmo_plugin/compat.py`): `allennlp predict` writes its output aside and names a bad input line;
`allennlp evaluate` names missing evaluation data as the command line's and prints its metrics.
"""

import argparse
import glob
import json
import os
import sys
from typing import Any

from allennlp.common.checks import ConfigurationError

from maelmo_declarations.owned_outputs import check_output_path, partial_path
from maelmo_declarations.refusals import Refusal
from maelmo_plugin.compat import _is_patched, _patch


def write_predictions_aside() -> None:
    """
    `allennlp predict --output-file` opens the output with "w" before the first prediction, so a run that
    stops (a bad input line, Ctrl-C, a crash) leaves an existing file truncated. The predict manager writes to
    `OUTPUT.partial` instead and moves it onto the output once every prediction is written; a run that stops
    removes the partial, leaving the output as it was. (`allennlp predict` has no `--force`: a complete run
    replaces the output, as before.)
    """
    from allennlp.commands import predict

    manager = predict._PredictManager
    if _is_patched(manager.run):
        return
    original_init, original_run = manager.__init__, manager.run

    def __init__(self, predictor, input_file, output_file, *args, **kwargs) -> None:
        if output_file is not None:
            refusal = predict_output_refusal(output_file, input_file)
            if refusal:
                print(f"allennlp predict: error: {refusal}", file=sys.stderr)
                sys.exit(2)
        original_init(self, predictor, input_file, None, *args, **kwargs)
        self._maelmo_output = output_file
        if output_file is not None:
            self._output_file = open(partial_path(output_file), "w")

    def run(self) -> None:
        try:
            original_run(self)  # closes the output file at its end
        except BaseException:
            if self._output_file is not None:
                self._output_file.close()
                os.remove(partial_path(self._maelmo_output))
            raise
        if self._maelmo_output is not None:
            os.replace(partial_path(self._maelmo_output), self._maelmo_output)

    _patch(manager, "__init__", __init__, mark=False)
    _patch(manager, "run", run)


def predict_output_refusal(output_file: str, input_file: str) -> str:
    """
    Why `--output-file` cannot be written ('' when it can): a directory or a missing folder
    (`check_output_path`), a symbolic link (replacing it would lose the user's link; writing through it, the
    file it points to), or the input itself (the predictions would replace the sentences they come from).
    """
    if os.path.islink(output_file):
        return f"--output-file {output_file} is a symbolic link: give the path of the file to write itself."
    try:
        check_output_path(output_file, force=True, example="predictions.jsonl")
    except Refusal as refusal:
        return str(refusal)
    if input_file != "-" and os.path.exists(output_file) and os.path.exists(input_file):
        if os.path.samefile(output_file, input_file):
            return f"--output-file {output_file} is the input file: give another path for the predictions."
    return ""


class BadPredictInput(ConfigurationError):
    """A line of `allennlp predict`'s input that cannot be read: reported in one line, without a traceback."""


def name_bad_predict_lines() -> None:
    """
    `allennlp predict` reads its JSON-lines input with `json.loads` and no line number, so a malformed line or
    a missing field ends in a 30-line traceback. Here each line is numbered as it is read: a line that is not
    JSON, or (for a predictor with a `check_json(json_dict, where)`, such as the plugin's) one whose fields
    are wrong, stops the run with `allennlp predict: error: in.jsonl, line 4: ...` and exit status 2, as does
    a predictor that refuses its arguments.
    """
    from allennlp.commands import predict
    from allennlp.common.file_utils import cached_path, open_compressed

    manager = predict._PredictManager
    if _is_patched(manager._get_json_data):
        return
    original_run = manager.run

    def _get_json_data(self):
        name = "standard input" if self._input_file == "-" else self._input_file
        stream = sys.stdin if self._input_file == "-" else open_compressed(cached_path(self._input_file))
        check = getattr(self._predictor, "check_json", None)
        try:
            for number, line in enumerate(stream, start=1):
                if line.isspace():
                    continue
                where = f"{name}, line {number}"
                try:
                    json_dict = self._predictor.load_line(line.rstrip("\r\n"))
                except json.JSONDecodeError as error:
                    raise BadPredictInput(
                        f"{where}: not valid JSON ({error.msg} at column {error.colno}); each line is one JSON "
                        f'object, e.g. {{"sentence": "The cat sleeps."}}.'
                    ) from None
                if check is not None:
                    try:
                        check(json_dict, where)
                    except ValueError as error:
                        raise BadPredictInput(str(error)) from None
                yield json_dict
        finally:
            if stream is not sys.stdin:
                stream.close()

    def run(self) -> None:
        try:
            original_run(self)
        except BadPredictInput as error:
            print(f"allennlp predict: error: {error}", file=sys.stderr)
            sys.exit(2)

    original_get_predictor = predict._get_predictor

    def _get_predictor(args):
        # A predictor that refuses its arguments (`--predictor-args '{"layer": 99}'`, an archive of another
        # model) says so in one line too, before any input is read.
        try:
            return original_get_predictor(args)
        except ConfigurationError as error:
            print(f"allennlp predict: error: {error}", file=sys.stderr)
            sys.exit(2)

    _patch(manager, "_get_json_data", _get_json_data)
    _patch(manager, "run", run, mark=False)
    _patch(predict, "_get_predictor", _get_predictor, mark=False)


def missing_evaluation_data(input_file: str) -> str:
    """
    Why `allennlp evaluate`'s INPUT_FILE (one path or glob, or several separated by commas, as AllenNLP splits
    them) names no file, or "". Checked before the archive loads, so that the error names the command line's
    argument: the reader, which cannot know where its path came from, would send the user to the config.
    """
    try:
        json.loads(f"[{input_file}]")
        return ""  # JSON objects, which some readers take as their data: nothing on disk to check
    except ValueError:
        pass
    for path in (part.strip() for part in input_file.split(",")):
        if not path or "://" in path:
            continue  # AllenNLP's cached_path fetches a URL itself
        expanded = os.path.expanduser(path)
        if glob.has_magic(expanded):
            if not any(os.path.isfile(match) for match in glob.glob(expanded)):
                return f"the evaluation data {path!r} (INPUT_FILE) is a glob that matches no file"
        elif not os.path.exists(expanded):
            return (
                f"the evaluation data {path!r} (INPUT_FILE) does not exist. Outside a checkout the sample "
                "corpus is in the installed package: `python -m maelmo_declarations.packaged_configs` prints "
                "its folder"
            )
    return ""


def print_evaluation_metrics() -> None:
    """
    `allennlp evaluate` logs its metrics only when given `--output-file` (AllenNLP 2.10), so a plain
    `allennlp evaluate ARCHIVE DATA` ended without a number. They are printed to stdout as JSON, as
    `--output-file` would hold them. Its INPUT_FILE is checked first (`missing_evaluation_data`).
    """
    from allennlp.commands import evaluate

    if _is_patched(evaluate.evaluate_from_args):
        return
    original = evaluate.evaluate_from_args

    def evaluate_from_args(args: argparse.Namespace) -> dict[str, Any]:
        missing = missing_evaluation_data(args.input_file)
        if missing:
            print(f"allennlp evaluate: error: {missing}", file=sys.stderr)
            sys.exit(2)
        metrics = original(args)
        if not args.output_file:
            print(json.dumps(metrics, indent=2))
        return metrics

    _patch(evaluate, "evaluate_from_args", evaluate_from_args)
