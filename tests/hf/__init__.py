import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# scripts/setup.sh installs transformers 5 there, beside the venv's 4.x, which AllenNLP needs.
TRANSFORMERS5 = Path(sys.prefix) / "transformers5"


def run_without_plugin(script: Path, request: dict[str, Any], major: str, work: Path) -> dict[str, Any]:
    """
    What `python SCRIPT REQUEST.json OUTPUT.json` computed under transformers `major` ("4": the venv's,
    "5": `TRANSFORMERS5`, skipped if absent), offline, with a fresh HF_HOME; the script imports
    `without_plugin` first, so it runs without AllenNLP and the plugin.
    """
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if major == "5":
        if not TRANSFORMERS5.is_dir():
            pytest.skip(f"transformers 5 is not installed in {TRANSFORMERS5}: run scripts/setup.sh")
        env["PYTHONPATH"] = str(TRANSFORMERS5)
    # A fresh HF_HOME: the remote code is copied there, and must come from this export, not an older one.
    env.update({"HF_HOME": str(work / "hf_home"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    # One thread: the fixture models are tiny, and on shared cores torch's second OpenMP thread waits
    # for CPU time at every op (25 training steps of a fixture head: 43 s with two threads, 2 s with one).
    env["OMP_NUM_THREADS"] = "1"
    request_file, output_file = work / "request.json", work / "output.json"
    request_file.write_text(json.dumps(request))
    command = [sys.executable, str(script), str(request_file), str(output_file)]
    # cwd outside the project, stdin closed: nothing may come from the plugin's tree or wait for an answer.
    result = subprocess.run(
        command, cwd=work, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL
    )
    assert result.returncode == 0, result.stderr[-3000:]
    output = json.loads(output_file.read_text())
    assert output["transformers_version"].startswith(major + ".")
    return output
