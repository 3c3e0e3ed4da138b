"""
Every archive trained so far loads, and gives the same outputs: archives written by 0.1.0's code (a Masked
ELMo, an ELMo biLM and a BERT*, made by tests/fixtures/archives_0_1_0/make.py from a worktree of that commit)
load with today's code to the same representations and loss, bit for bit.
"""

import pytest
import torch
from safetensors import safe_open

from tests import FIXTURES_ROOT
from tests.fixtures.archives_0_1_0.outputs import ARCHIVES, outputs

FIXTURES = FIXTURES_ROOT / "archives_0_1_0"


@pytest.mark.parametrize("name", sorted(ARCHIVES))
def test_a_0_1_0_archive_gives_the_outputs_it_gave_then(name):
    with safe_open(str(FIXTURES / "outputs.safetensors"), framework="pt") as recorded:
        keys = [key for key in recorded.keys() if key.startswith(f"{name}.")]
        then = {key.split(".", 1)[1]: recorded.get_tensor(key) for key in keys}
    now = outputs(str(FIXTURES / f"{name}.tar.gz"))
    assert sorted(now) == sorted(then)
    assert len(then) >= 3  # h_0, at least one layer, and the loss
    for key, value in then.items():
        assert now[key].dtype == value.dtype and now[key].shape == value.shape, key
        assert torch.equal(now[key], value), f"{name}: {key} differs from 0.1.0's"
