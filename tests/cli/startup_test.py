"""The start-up hook (`maelmo_startup.py`, installed as a .pth): commands start offline and quiet, without
an nltk_data stub."""

import os
import subprocess
import sys

# Records every address lookup and connection, and refuses them, then runs the import under test.
NETWORK_GUARD = """
import socket, sys
attempts = []
def refuse(*args, **kwargs):
    attempts.append(args[1:2] or args[:1])
    raise OSError("the test allows no network")
socket.getaddrinfo = refuse
socket.socket.connect = refuse
{prelude}
import allennlp_models.rc.tools.narrativeqa
print("network attempts:", len(attempts))
"""
WITHOUT_HOOK = (
    "sys.meta_path[:] = [finder for finder in sys.meta_path if type(finder).__name__ != 'OfflineNarrativeQA']"
)


def run(code, tmp_path):
    # nltk looks for its data under HOME and sys.prefix (and NLTK_DATA): none of them holds punkt here.
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("NLTK_DATA", None)
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )


def test_allennlp_models_is_imported_without_a_network_attempt_or_nltk_errors(tmp_path):
    result = run(NETWORK_GUARD.format(prelude=""), tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "network attempts: 0" in result.stdout
    assert "[nltk_data]" not in result.stdout + result.stderr


def test_without_the_hook_the_same_import_tries_the_network(tmp_path):
    # What the hook prevents, so that the test above can fail: nltk.download tries to fetch punkt.
    result = run(NETWORK_GUARD.format(prelude=WITHOUT_HOOK), tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "network attempts: 0" not in result.stdout
    assert "[nltk_data] Error loading punkt" in result.stdout + result.stderr


def test_allennlp_commands_start_without_warnings_or_nltk_errors(tmp_path):
    command = [os.path.join(os.path.dirname(sys.executable), "allennlp"), "train", "--help"]
    env = {**os.environ, "HOME": str(tmp_path)}
    result = subprocess.run(
        [*command, "--include-package", "maelmo_plugin"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "usage: allennlp train" in result.stdout
    assert result.stderr == ""


def test_the_module_loaded_without_downloads_keeps_its_loaders_other_methods(tmp_path):
    # inspect, linecache (tracebacks) and pkgutil ask a module's __loader__ for its source and package-ness.
    code = (
        "import sys, allennlp_models.rc.tools.narrativeqa as module\n"
        "loader = module.__loader__\n"
        "print(type(loader).__name__, loader.is_package(module.__name__), 'nltk' in loader.get_source(module.__name__))\n"
    )
    result = run(code, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "_WithoutDownloads False True"
