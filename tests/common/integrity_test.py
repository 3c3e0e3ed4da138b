"""
`maelmo_plugin/common/integrity.py`: an archive carries the sha256 of each member, and every entry point that
loads it checks them. Before (issue 70), a byte flipped inside a tensor of `weights.th`, the archive re-tarred
and re-gzipped, was loaded and served by `maelmo-embed` and `maelmo-export`, which exited 0.
"""

import io
import json
import logging
import tarfile

import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive

from maelmo_plugin.common import integrity
from maelmo_plugin.common.integrity import ARCHIVE_MANIFEST, verify_extracted
from maelmo_plugin.hf.export import export_archive
from tests import FIXTURES_ROOT, run_allennlp_in_process


def _members(archive):
    with tarfile.open(archive, "r:gz") as tar:
        return {member.name: tar.extractfile(member).read() for member in tar.getmembers() if member.isfile()}


def _repacked(archive, path, change):
    """`archive` re-tarred and re-gzipped at `path` after `change(members)`: gzip's and tar's checks pass."""
    members = _members(archive)
    change(members)
    with tarfile.open(path, "w:gz") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return str(path)


def _flip_a_weight(members):
    weights = torch.load(io.BytesIO(members["weights.th"]), weights_only=True)
    name = next(key for key, value in weights.items() if value.is_floating_point() and value.numel() > 4)
    value = weights[name].view(-1)[3].clone()
    original = value.numpy().tobytes()
    assert members["weights.th"].count(original) >= 1
    changed = (value + 1.0).numpy().tobytes()
    members["weights.th"] = members["weights.th"].replace(original, changed, 1)


def test_an_archive_lists_the_sha256_of_every_member(masked_elmo_archive):
    members = _members(masked_elmo_archive)
    manifest = json.loads(members[ARCHIVE_MANIFEST])
    assert set(manifest["sha256"]) == set(members) - {ARCHIVE_MANIFEST}
    assert {"config.json", "weights.th", "vocabulary/non_padded_namespaces.txt"} <= set(manifest["sha256"])
    assert any(name.startswith("maelmo_assets/") for name in manifest["sha256"])  # include_in_archive too


@pytest.mark.parametrize(
    "change, message",
    [
        (_flip_a_weight, "member weights.th is not what was archived"),
        (lambda members: members.pop("vocabulary/non_padded_namespaces.txt"), "lacks its member vocabulary/"),
        (lambda members: members.update({"extra.py": b"print('hello')"}), "holds extra.py, which its"),
        (lambda members: members.pop("config.json"), "holds no config.json"),
        (lambda members: members.update({ARCHIVE_MANIFEST: b"[[["}), f"holds a damaged {ARCHIVE_MANIFEST}"),
    ],
)
def test_a_changed_archive_is_refused_in_one_line_naming_it_and_the_member(
    masked_elmo_archive, tmp_path, change, message
):
    damaged = _repacked(masked_elmo_archive, tmp_path / "model.tar.gz", change)
    with pytest.raises(ConfigurationError, match=f"The model archive {damaged}.*{message}") as refusal:
        load_archive(damaged)
    assert "\n" not in str(refusal.value) and "/tmp/tmp" not in str(refusal.value).replace(damaged, "")


def test_the_commands_refuse_a_damaged_archive_and_write_nothing(masked_elmo_archive, tmp_path, capsys):
    damaged = _repacked(masked_elmo_archive, tmp_path / "model.tar.gz", _flip_a_weight)
    lines = tmp_path / "lines.txt"
    lines.write_text("A cat sleeps.\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        run_allennlp_in_process("maelmo-embed", damaged, str(lines), str(tmp_path / "out.hdf5"))
    error = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in error
    assert "member weights.th is not what was archived" in error.strip().splitlines()[-1]
    with pytest.raises(ConfigurationError, match="member weights.th is not what was archived"):
        export_archive(damaged, str(tmp_path / "export"))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["lines.txt", "model.tar.gz"]


def test_an_archive_written_before_the_manifest_loads_with_one_warning(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(integrity, "_warned_unverified", set())  # another test may have loaded it already
    old = str(FIXTURES_ROOT / "archives_0_1_0" / "masked_elmo.tar.gz")
    with caplog.at_level(logging.WARNING):
        load_archive(old)
        load_archive(old)
    warnings = [record for record in caplog.records if "cannot be verified" in record.getMessage()]
    assert len(warnings) == 1 and old in warnings[0].getMessage()
    assert verify_extracted(str(tmp_path), "x.tar.gz") == (
        "The model archive x.tar.gz holds no config.json: it is not an archive `allennlp train` wrote."
    )


def test_an_archive_stopped_while_it_is_written_leaves_no_model_tar_gz(
    masked_elmo_archive, tmp_path, monkeypatch
):
    """`model.tar.gz` is written whole or not at all: a run killed while it archives must not leave a truncated one
    that a resuming job (the arena's, a user's script) takes for the finished run's."""
    from allennlp.models.archival import archive_model

    with tarfile.open(masked_elmo_archive) as tar:
        tar.extractall(tmp_path / "run", filter="data")
    run = tmp_path / "run"
    (run / "weights.th").rename(run / "best.th")
    added = []
    original = tarfile.TarFile.add

    def stopped(self, name, *args, **kwargs):
        if added:  # the first member is in, the rest never comes
            raise KeyboardInterrupt
        added.append(name)
        return original(self, name, *args, **kwargs)

    monkeypatch.setattr(tarfile.TarFile, "add", stopped)
    with pytest.raises(KeyboardInterrupt):
        archive_model(run)
    assert added and not (run / "model.tar.gz").exists()
    monkeypatch.setattr(tarfile.TarFile, "add", original)
    archive_model(run)  # run again, it is written whole, and nothing partial is left beside it
    assert load_archive(str(run / "model.tar.gz")).model is not None
    assert sorted(path.name for path in run.iterdir() if "partial" in path.name) == []
