"""
Every archive trained so far loads, and gives the same outputs: archives written by 0.1.0's code (a Masked
ELMo, an ELMo biLM and a BERT*, made by tests/fixtures/archives_0_1_0/make.py from a worktree of that commit)
load with today's code to the same representations and loss: bit for bit on the kernels that recorded them,
within float32's rounding on other CPUs (tests/recorded_floats.py). The AVX2 recording was first made on an
AVX2-only EPYC; recorded again on an AVX-512 one with its ISA held to AVX2, it came out the same bit for bit.
"""

import json
import os
import platform
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from tests import FIXTURES_ROOT, PROJECT_ROOT
from tests.fixtures.archives_0_1_0.outputs import ARCHIVES, outputs
from tests.recorded_floats import (
    ULPS_OF_LARGEST,
    assert_as_recorded,
    choose_recording,
    cpu_kind,
    kernels,
    kind_summary,
    read_recording,
)

FIXTURES = FIXTURES_ROOT / "archives_0_1_0"
RECORDINGS = sorted(FIXTURES.glob("outputs_*.safetensors"))


def _compare(name: str, now: dict, recording, same_kernels: bool) -> None:
    kind, then = read_recording(recording, prefix=f"{name}.")
    assert sorted(now) == sorted(then)
    assert len(then) >= 3  # h_0, at least one layer, and the loss
    for key, value in then.items():
        assert_as_recorded(now[key], value, same_kernels, f"{name}: {key}", recorded_on=kind_summary(kind))


@pytest.mark.parametrize("name", sorted(ARCHIVES))
def test_a_0_1_0_archive_gives_the_outputs_it_gave_then(name):
    recording, same_kernels = choose_recording(RECORDINGS)
    _compare(name, outputs(str(FIXTURES / f"{name}.tar.gz")), recording, same_kernels)


def test_the_recordings_name_their_kernels_and_agree_within_rounding():
    kinds = [read_recording(path)[0] for path in RECORDINGS]
    assert len({kernels(kind) for kind in kinds}) == len(kinds) >= 2
    first, others = load_file(str(RECORDINGS[0])), [load_file(str(path)) for path in RECORDINGS[1:]]
    for other in others:
        assert sorted(other) == sorted(first)
        for key, value in first.items():
            assert_as_recorded(other[key], value, same_kernels=False, what=key)


_ON_OTHER_KERNELS = """
import json, sys
from safetensors.torch import save_file
from tests.fixtures.archives_0_1_0.outputs import ARCHIVES, outputs
from tests.recorded_floats import cpu_kind
tensors = {}
for name in ARCHIVES:
    tensors.update({f"{name}.{key}": value for key, value in outputs(f"tests/fixtures/archives_0_1_0/{name}.tar.gz").items()})
save_file(tensors, sys.argv[1], metadata={"cpu_kind": json.dumps(cpu_kind())})
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="ONEDNN_MAX_CPU_ISA is x86's")
def test_on_kernels_no_recording_has_the_outputs_agree_within_rounding_not_bit_for_bit(tmp_path):
    """
    The rule's other branch, on this machine: held to SSE4.1 (oneDNN) and ATen's default kernels, which no
    recording used, the outputs differ from the recording in their bits and agree within float32's rounding.
    """
    limits = {"ONEDNN_MAX_CPU_ISA": "SSE41", "ATEN_CPU_CAPABILITY": "default"}
    written = tmp_path / "outputs.safetensors"
    env = {**os.environ, **limits, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-c", _ON_OTHER_KERNELS, str(written)]
    result = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    from safetensors import safe_open

    with safe_open(str(written), framework="pt") as opened:
        kind = json.loads(opened.metadata()["cpu_kind"])
    assert kind["onednn_isa"] != cpu_kind()["onednn_isa"] and kind["aten_capability"] == "DEFAULT"
    assert all(kernels(read_recording(path)[0]) != kernels(kind) for path in RECORDINGS)
    now = load_file(str(written))
    recording = RECORDINGS[0]
    differing = 0
    for name in ARCHIVES:
        tensors = {key.split(".", 1)[1]: value for key, value in now.items() if key.startswith(f"{name}.")}
        _compare(name, tensors, recording, same_kernels=False)
        _, then = read_recording(recording, prefix=f"{name}.")
        differing += sum(not torch.equal(tensors[key], value) for key, value in then.items())
    assert differing > 0, (
        "the narrower kernels gave the recorded bits: this test no longer tries the rounding branch"
    )


def test_the_rule_is_bit_for_bit_on_the_same_kernels_and_a_few_units_in_the_last_place_elsewhere():
    then = torch.tensor([0.001, -2.0, 0.5])
    eps = torch.finfo(torch.float32).eps
    one_unit = then + torch.tensor(
        [0.0, 2.0 * eps, 0.0]
    )  # 1 unit in the last place of the largest value, 2.0
    assert_as_recorded(then.clone(), then, same_kernels=True, what="equal")
    with pytest.raises(AssertionError, match="on the kernels that recorded it"):
        assert_as_recorded(one_unit, then, same_kernels=True, what="one unit")
    assert_as_recorded(one_unit, then, same_kernels=False, what="one unit")
    # Far more than the element's own units (0.001 is small), within the largest value's: rounding, still.
    assert_as_recorded(then + torch.tensor([4 * 2.0 * eps, 0.0, 0.0]), then, same_kernels=False, what="small")
    too_far = then + torch.tensor([0.0, 0.0, (ULPS_OF_LARGEST + 1) * 2.0 * eps])
    with pytest.raises(AssertionError, match="over float rounding"):
        assert_as_recorded(too_far, then, same_kernels=False, what="too far")
    with pytest.raises(AssertionError):
        assert_as_recorded(then.double(), then.double().float(), same_kernels=False, what="dtype")
