"""The CPU recurrence joined in one file for the Hugging Face export: it imports only torch, runs without the
plugin, and computes what the plugin's recurrence computes, bit for bit."""

import ast
import sys

import pytest
import torch

from maelmo_plugin.lm.modules.recurrence import standalone
from maelmo_plugin.lm.modules.recurrence.cpu import cpu_bidirectional_lstm
from maelmo_plugin.lm.modules.recurrence.standalone import SOURCES, standalone_source


def imported_packages(source: str) -> set[str]:
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "a relative import: the export would not find the file"
            imported.add(node.module.split(".")[0])
    return imported - set(sys.stdlib_module_names)


@pytest.mark.parametrize("name", SOURCES)
def test_each_source_imports_only_torch_and_the_sources_before_it(name):
    source = (standalone.FOLDER / name).read_text()
    assert imported_packages(source) <= {"torch", "maelmo_plugin"}
    own = {
        node.module.rsplit(".", 1)[-1] + ".py"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("maelmo_plugin")
    }
    assert own <= set(SOURCES[: SOURCES.index(name)])


def test_the_joined_file_imports_only_torch_and_ends_with_the_recurrence():
    source = standalone_source()
    assert imported_packages(source) == {"torch"}
    assert source.startswith('"""\nA bidirectional LSTM-with-projection layer for the CPU')
    assert source == standalone_source()  # the same bytes every time
    names = {
        node.name for node in ast.parse(source).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
    }
    assert {"cpu_bidirectional_lstm", "packed_linear", "reversal_index", "_ProjectedLstmRecurrence"} <= names


@pytest.mark.parametrize("lengths", [None, torch.tensor([7, 3, 5])], ids=["full", "padded"])
def test_the_joined_file_computes_what_the_plugin_computes(lengths):
    namespace: dict = {"__name__": "cpu_lstm_recurrence"}
    exec(compile(standalone_source(), "cpu_lstm_recurrence.py", "exec"), namespace)
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(6, 10, proj_size=3, batch_first=True, bidirectional=True)
    inputs = torch.randn(3, 7, 6, requires_grad=True)
    results = []
    for function in (cpu_bidirectional_lstm, namespace["cpu_bidirectional_lstm"]):
        inputs.grad = None
        lstm.zero_grad()
        outputs, (h, c) = function(lstm, inputs, lengths)
        (outputs.sum() + h.sum() + c.sum()).backward()
        results.append([outputs, h, c, inputs.grad.clone(), *(p.grad.clone() for p in lstm.parameters())])
    for ours, joined in zip(*results):
        assert torch.equal(ours, joined)
