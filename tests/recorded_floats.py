"""
The one rule for a test that compares outputs with floats recorded on another machine: bit for bit on the
kernels that recorded them, within float32's rounding on any others.

Why not always bit for bit: the same code, weights and input give other float32 bits on another CPU, because
oneDNN and ATen pick kernels by the CPU's vector ISA (AVX2, AVX-512, ...) and wider kernels sum in another
order. On an AVX-512 EPYC, representations recorded on an AVX2 one differ by up to 2.4 units in the last place
of the tensor's largest value; with `ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2` they are equal bit for
bit (../shared/notes/stack.md has the measurement). Why not always within a tolerance: on the recorder's kernels
bit-equality is the stronger check, and it is the one that sees a change of a few units in the last place (the
plugin's recurrence replaced by torch's LSTM moves a layer by about 4).

What decides the bits is the kernel set (`kernels`): torch's version, the CPU's architecture and vendor (MKL
dispatches on it), the ISA oneDNN runs and ATen's CPU capability. The CPU family is recorded beside them
(`cpu_kind`) but is not compared: an AVX2 recording made on an older EPYC family reproduces bit for bit on a
family-26 EPYC held to the same ISAs. Each recording's safetensors metadata holds its `cpu_kind`, as JSON under
"cpu_kind"; `ONEDNN_MAX_CPU_ISA` and `ATEN_CPU_CAPABILITY` make one machine run a narrower kind's kernels.
"""

import functools
import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Optional

import torch
from safetensors import safe_open

# The variables that hold torch's libraries to narrower kernels than the CPU has.
ISA_LIMITS = ("ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")
# What decides a float32 result's bits; the rest of `cpu_kind` is said, not compared.
KERNEL_FIELDS = ("torch", "machine", "vendor", "onednn_isa", "aten_capability")
# "Within float32's rounding": at most this many units in the last place (float32's eps) of the largest
# magnitude in the tensor. A relative bound per element would not do: values near zero that come out of a
# cancellation differ by thousands of their own units in the last place. The largest seen between three kernel
# sets (AVX-512, AVX2, SSE4.1 with ATen's default) is 2.4; 8 leaves room for the kernels of CPUs not tried here.
ULPS_OF_LARGEST = 8

_ONEDNN_PROBE = (
    "import torch\n"
    "weight = torch.ops.mkldnn._reorder_linear_weight(torch.ones(8, 8), 4)\n"
    "torch.ops.mkldnn._linear_pointwise(torch.ones(4, 8), weight, None, 'none', [], '')\n"
)


@functools.cache
def onednn_isa() -> str:
    """
    The ISA oneDNN runs in this environment, in oneDNN's words ("Intel AVX2", ...), or "none" where torch has
    no oneDNN. Read from oneDNN's verbose header, in a subprocess (oneDNN prints it to the C stdout, once per
    process), on the packed product the plugin's CPU recurrence uses. The subprocess inherits the environment,
    so `ONEDNN_MAX_CPU_ISA` counts.
    """
    result = subprocess.run(
        [sys.executable, "-c", _ONEDNN_PROBE],
        env={**os.environ, "ONEDNN_VERBOSE": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    for line in result.stdout.splitlines():
        if ",cpu,isa:" in line:
            return line.split(",cpu,isa:", 1)[1].strip()
    return "none"


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (empty where there is none: not Linux)."""
    fields: dict[str, str] = {}
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return fields
    for line in text.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def cpu_kind() -> dict[str, str]:
    """
    This machine's kind as a recording names it: the `KERNEL_FIELDS`, the CPU's family and model name, and the
    variables that held it to narrower kernels ("isa_limits").
    """
    info = _cpuinfo()
    return {
        "torch": torch.__version__.split("+")[0],
        "machine": platform.machine(),
        "vendor": info.get("vendor_id") or info.get("CPU implementer") or platform.processor() or "unknown",
        "family": info.get("cpu family", "unknown"),
        "model_name": info.get("model name", "unknown"),
        "onednn_isa": onednn_isa(),
        "aten_capability": torch.backends.cpu.get_cpu_capability(),
        "isa_limits": " ".join(f"{name}={os.environ[name]}" for name in ISA_LIMITS if os.environ.get(name)),
    }


def kernels(kind: dict[str, str]) -> tuple[str, ...]:
    return tuple(kind.get(field, "unrecorded") for field in KERNEL_FIELDS)


def recording_metadata(**extra: str) -> dict[str, str]:
    """The metadata a new recording is saved with: `extra` (a commit, say) and this machine's `cpu_kind`."""
    return {**extra, "cpu_kind": json.dumps(cpu_kind(), sort_keys=True)}


def read_recording(path: Path, prefix: str = "") -> tuple[dict[str, str], dict[str, torch.Tensor]]:
    """A recording's `cpu_kind` and its tensors whose key starts with `prefix` (the prefix taken off)."""
    with safe_open(str(path), framework="pt") as recorded:
        metadata = recorded.metadata() or {}
        if "cpu_kind" not in metadata:
            raise ValueError(
                f"{path} names no cpu_kind in its metadata: record it again (recording_metadata)"
            )
        tensors = {
            key[len(prefix) :]: recorded.get_tensor(key) for key in recorded.keys() if key.startswith(prefix)
        }
    return json.loads(metadata["cpu_kind"]), tensors


def choose_recording(paths: Iterable[Path]) -> tuple[Path, bool]:
    """
    The recording to compare with, and whether it was made on this machine's kernels: the first with the same
    kernels, else the first (sorted by name), to be compared within rounding.
    """
    paths = sorted(paths)
    if not paths:
        raise ValueError("no recording to compare with")
    here = kernels(cpu_kind())
    for path in paths:
        if kernels(read_recording(path)[0]) == here:
            return path, True
    return paths[0], False


def assert_as_recorded(
    now: torch.Tensor, then: torch.Tensor, same_kernels: bool, what: str, recorded_on: str = ""
) -> None:
    """
    `now` equals `then` bit for bit on the recorder's kernels, within `ULPS_OF_LARGEST` on others. `what` names
    the tensor, `recorded_on` the recording's kind (`kind_summary`) for the message.
    """
    where = f" (recorded on {recorded_on}; here {kind_summary()})" if recorded_on else ""
    assert now.dtype == then.dtype and now.shape == then.shape, f"{what}: {now.dtype} {tuple(now.shape)}"
    if same_kernels:
        assert torch.equal(now, then), (
            f"{what} differs from its recording, on the kernels that recorded it{where}"
        )
        return
    largest = float(then.abs().max()) if then.numel() else 0.0
    bound = ULPS_OF_LARGEST * torch.finfo(then.dtype).eps * largest
    difference = float((now - then).abs().max()) if then.numel() else 0.0
    assert difference <= bound, (
        f"{what} differs from its recording by {difference:.3g}, over float rounding's {bound:.3g} "
        f"({ULPS_OF_LARGEST} units in the last place of {largest:.3g}){where}"
    )


def kind_summary(kind: Optional[dict[str, str]] = None) -> str:
    """One line naming a kind, for a test's message."""
    kind = cpu_kind() if kind is None else kind
    return ", ".join(f"{field} {kind.get(field, 'unrecorded')}" for field in (*KERNEL_FIELDS, "family"))
