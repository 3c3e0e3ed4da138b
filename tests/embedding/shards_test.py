"""`maelmo-embed --shard K/N` and `maelmo-merge`: the parts of one input, joined into the unsharded file."""

import json
import os
import shutil
from unittest import mock

import h5py
import pytest

from maelmo_declarations.owned_outputs import write_manifest
from maelmo_declarations.refusals import Refusal
from maelmo_declarations.shards import Shard
from maelmo_files.embedding.merge import merge_shards
from maelmo_files.embedding.shards import SHARD_ATTRIBUTE
from maelmo_plugin.lm.predictors.representations import RepresentationsPredictor
from tests import run_allennlp_in_process
from tests.embedding.job_test import assert_same_vectors, run_cli, write_lines

# --batch-size 2 reads windows of 64 lines: 150 lines are 3 windows (64, 64, 22), and repeat sentences
# across windows (write_lines repeats its lines), so that "the last index wins" spans shards.
NUM_LINES = 150


def merge_cli(*args: str) -> None:
    run_allennlp_in_process("maelmo-merge", *args)


def last_error_line(capsys) -> str:
    error = capsys.readouterr().err
    assert "Traceback" not in error
    return error.strip().splitlines()[-1]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("num_windows", [0, 1, 3, 10])
def test_the_parts_cover_every_window_once_and_differ_by_one_window_at_most(count, num_windows):
    parts = [Shard(index, count).windows(num_windows) for index in range(count)]
    assert [window for part in parts for window in part] == list(range(num_windows))
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    lines = [
        Shard(index, count).lines(num_windows * 64 - 5 if num_windows else 0, 64) for index in range(count)
    ]
    assert [line for part in lines for line in part] == list(range(max(num_windows * 64 - 5, 0)))


@pytest.mark.parametrize("text", ["2", "1/2/3", "a/b", "2/2", "-1/2", "0/0"])
def test_a_bad_shard_is_refused_saying_what_k_and_n_are(text):
    with pytest.raises(ValueError, match="K/N"):
        Shard.parse(text)


@pytest.fixture(scope="module")
def runs(fill_mask_archive, tmp_path_factory):
    """The unsharded file, and the two shards of the same input and options."""
    directory = tmp_path_factory.mktemp("shards")
    input_file = directory / "sentences.txt"
    write_lines(input_file, NUM_LINES)
    common = ("--batch-size", "2")
    run_cli(fill_mask_archive, str(input_file), str(directory / "whole.hdf5"), *common)
    for index in range(2):
        run_cli(
            fill_mask_archive,
            str(input_file),
            str(directory / f"part{index}.hdf5"),
            *common,
            "--shard",
            f"{index}/2",
        )
    return directory


def test_merged_shards_are_the_unsharded_file_bit_for_bit(runs, tmp_path):
    with h5py.File(runs / "part0.hdf5", "r") as part0, h5py.File(runs / "part1.hdf5", "r") as part1:
        # Whole windows: shard 0 holds the first 64 lines, shard 1 the other 86, each named by its global line.
        assert {name for name in part0 if name != "sentence_to_index"} == {str(i) for i in range(64)}
        assert {name for name in part1 if name != "sentence_to_index"} == {
            str(i) for i in range(64, NUM_LINES)
        }
        record = json.loads(part1.attrs[SHARD_ATTRIBUTE])
        assert (record["shard"], record["num_shards"], record["lines"]) == (1, 2, [64, NUM_LINES])
    merged = tmp_path / "merged.hdf5"
    merge_cli(str(merged), str(runs / "part1.hdf5"), str(runs / "part0.hdf5"))  # any order
    assert_same_vectors(merged, runs / "whole.hdf5")  # vectors, tokens and sentence_to_index's JSON string
    with h5py.File(merged, "r") as hdf5:
        assert SHARD_ATTRIBUTE not in hdf5.attrs and len(hdf5) == NUM_LINES + 1
        # A sentence repeated across the shards maps to its last line, as in an unsharded run.
        lines = (runs / "sentences.txt").read_text(encoding="utf-8").splitlines()
        last = max(index for index, line in enumerate(lines) if line == lines[0])
        assert last >= 64 and json.loads(hdf5["sentence_to_index"][0])[lines[0]] == str(last)


def test_more_shards_than_windows_leave_empty_shards_that_merge(fill_mask_archive, runs, tmp_path, capsys):
    paths = []
    for index in range(4):  # 3 windows in 4 parts: shard 0 is empty
        path = tmp_path / f"p{index}.hdf5"
        run_cli(
            fill_mask_archive,
            str(runs / "sentences.txt"),
            str(path),
            "--batch-size",
            "2",
            "--shard",
            f"{index}/4",
        )
        paths.append(str(path))
    with h5py.File(paths[0], "r") as empty:
        assert list(empty) == ["sentence_to_index"]
    assert (
        "(shard 0/4 of "
        in capsys.readouterr().out.split("Wrote the vectors of 0 sentences")[1].split("\n")[0]
    )
    assert merge_shards(str(tmp_path / "merged.hdf5"), paths) == NUM_LINES
    assert_same_vectors(tmp_path / "merged.hdf5", runs / "whole.hdf5")


class TestBadSetsOfShardsAreRefusedInOneLine:
    def refused(self, capsys, output, *shards) -> str:
        with pytest.raises(SystemExit) as exit_info:
            merge_cli(str(output), *map(str, shards))
        assert exit_info.value.code == 2 and not output.exists()
        return last_error_line(capsys)

    def test_a_missing_shard(self, runs, tmp_path, capsys):
        message = self.refused(capsys, tmp_path / "out.hdf5", runs / "part0.hdf5")
        assert "Shard 1 of 2 is missing" in message and "--shard K/2" in message

    def test_a_duplicated_shard(self, runs, tmp_path, capsys):
        copy = tmp_path / "copy.hdf5"
        shutil.copy(runs / "part0.hdf5", copy)
        message = self.refused(capsys, tmp_path / "out.hdf5", runs / "part0.hdf5", copy, runs / "part1.hdf5")
        assert f"{runs / 'part0.hdf5'} and {copy} are both shard 0/2" in message

    def test_a_shard_of_other_options_or_input(self, fill_mask_archive, runs, tmp_path, capsys):
        other = tmp_path / "other.hdf5"
        run_cli(
            fill_mask_archive, str(runs / "sentences.txt"), str(other), "--batch-size", "4", "--shard", "1/2"
        )
        message = self.refused(capsys, tmp_path / "out.hdf5", runs / "part0.hdf5", other)
        assert f"{other} is a shard of another run than {runs / 'part0.hdf5'}" in message
        assert "batch_size: 2 then, 4 now" in message
        changed = tmp_path / "changed.txt"
        write_lines(changed, NUM_LINES + 1)
        run_cli(fill_mask_archive, str(changed), str(other), "--batch-size", "2", "--shard", "1/2", "--force")
        assert "the input's content" in self.refused(
            capsys, tmp_path / "out.hdf5", runs / "part0.hdf5", other
        )

    def test_a_file_that_is_not_a_shard_or_an_existing_output(self, runs, tmp_path, capsys):
        message = self.refused(capsys, tmp_path / "out.hdf5", runs / "part0.hdf5", runs / "whole.hdf5")
        assert f"{runs / 'whole.hdf5'} is not a shard" in message
        existing = tmp_path / "exists.hdf5"
        existing.write_bytes(b"precious")
        shards = [str(runs / "part0.hdf5"), str(runs / "part1.hdf5")]
        for force in (False, True):
            with pytest.raises(Refusal, match="a file that maelmo-merge did not write"):
                merge_shards(str(existing), shards, force=force)
        write_manifest(str(existing), "maelmo-merge", directory=False)  # a previous merge
        with pytest.raises(Refusal, match="holds a previous output of maelmo-merge.*--force"):
            merge_shards(str(existing), shards)
        assert existing.read_bytes() == b"precious"
        with pytest.raises(Refusal, match="is the input"):
            merge_shards(shards[0], shards, force=True)


def test_an_unfinished_shard_continues_only_as_the_same_shard(fill_mask_archive, runs, tmp_path, capsys):
    output = tmp_path / "part.hdf5"
    original, calls = RepresentationsPredictor.vectors, []

    def failing_second_batch(self, instances):
        calls.append(len(instances))
        if len(calls) == 2:
            raise RuntimeError("out of memory")
        return original(self, instances)

    args = (fill_mask_archive, str(runs / "sentences.txt"), str(output), "--batch-size", "2")
    with mock.patch.object(RepresentationsPredictor, "vectors", failing_second_batch):
        with pytest.raises(RuntimeError, match="out of memory"):
            run_cli(*args, "--shard", "0/2")
    with pytest.raises(SystemExit):
        run_cli(*args, "--shard", "1/2")
    assert "shard: '0/2' then, '1/2' now" in last_error_line(capsys)
    run_cli(*args, "--shard", "0/2")
    assert_same_vectors(output, runs / "part0.hdf5")


@pytest.mark.parametrize("text", ["٣/4", " 1/4", "1_0/20", "0/100001", "0/10000000000000000000000"])
def test_a_shard_in_other_digits_or_beyond_the_bound_is_refused(text):
    with pytest.raises(ValueError, match="K/N"):
        Shard.parse(text)


def _set_record(hdf5: h5py.File, **changes) -> None:
    record = json.loads(hdf5.attrs[SHARD_ATTRIBUTE])
    record.update(changes)
    hdf5.attrs[SHARD_ATTRIBUTE] = json.dumps(record)


def _replace_member(shard: h5py.File, name: str, link) -> None:
    del shard[name]
    shard[name] = link


class TestHostileShardsAreRefusedInOneLineAndNothingIsLost:
    """docs/bad_inputs.md: a shard altered, linked or oversized, and an output whose partial is not merge's."""

    def merge_altered(self, runs, tmp_path, capsys, change) -> str:
        shard = tmp_path / "altered.hdf5"
        shutil.copy(runs / "part0.hdf5", shard)
        with h5py.File(shard, "r+") as hdf5:
            change(hdf5)
        output = tmp_path / "out.hdf5"
        with pytest.raises(SystemExit) as exit_info:
            merge_cli(str(output), str(shard), str(runs / "part1.hdf5"))
        assert exit_info.value.code == 2 and not output.exists()
        assert not (tmp_path / "out.hdf5.partial").exists()
        return last_error_line(capsys)

    @pytest.mark.parametrize(
        "changes, message",
        [
            ({"num_shards": 10**22}, "0 <= K < N <= 100000"),
            ({"lines": [0, 10**10]}, "holds lines 0 to 63, and its record says [0, 10000000000]"),
            (
                {"num_lines": 10**10},
                "of 10000000000 lines holds lines 0 to 4999999999, and its record says [0, 64]",
            ),
            ({"shard": "0"}, "non-negative integers"),
            ({"format": 1}, "format 1; this maelmo-merge reads format 2"),
            ({"sha256": None}, "sha256"),
        ],
    )
    def test_a_record_whose_sizes_disagree(self, runs, tmp_path, capsys, changes, message):
        assert message in self.merge_altered(
            runs, tmp_path, capsys, lambda hdf5: _set_record(hdf5, **changes)
        )

    def test_a_record_that_is_not_json(self, runs, tmp_path, capsys):
        def change(hdf5):
            hdf5.attrs[SHARD_ATTRIBUTE] = "{not json"

        assert "record is malformed (not JSON, or nested too deep)" in self.merge_altered(
            runs, tmp_path, capsys, change
        )

    @pytest.mark.parametrize(
        "text, message", [("[" * 60_000, "nested too deep"), ("[" * 70_000, "longer than any")]
    )
    def test_a_record_nested_too_deep_or_too_long(self, runs, tmp_path, capsys, text, message):
        """Deeply nested JSON was a RecursionError traceback (issue 70)."""

        def change(hdf5):
            hdf5.attrs[SHARD_ATTRIBUTE] = text

        assert message in self.merge_altered(runs, tmp_path, capsys, change)

    def test_a_record_whose_numbers_agree_on_an_unbounded_range(self, runs, tmp_path, capsys):
        """N = 1 and lines [0, 10^19] agree with each other: a set of 10^19 names was built (issue 70)."""
        huge = 10**19
        message = self.merge_altered(
            runs,
            tmp_path,
            capsys,
            lambda hdf5: _set_record(hdf5, shard=0, num_shards=1, num_lines=huge, lines=[0, huge]),
        )
        assert f"should hold the datasets of lines 0 to {huge - 1}" in message

    def test_a_dataset_declared_beyond_its_bytes_is_refused_before_it_is_read(self, runs, tmp_path, capsys):
        """A (3, 20,000,000, 16) dataset in a tiny file was read whole, 3.8 GB, before its shape was checked."""

        def change(hdf5):
            tokens = hdf5["5"].attrs["tokens"]
            del hdf5["5"]
            hdf5.create_dataset("5", shape=(3, 20_000_000, 16), dtype="float32")
            hdf5["5"].attrs.create("tokens", tokens, dtype=h5py.string_dtype())

        message = self.merge_altered(runs, tmp_path, capsys, change)
        assert "the dataset of line 5 is not float vectors stored whole in the file" in message
        assert (tmp_path / "altered.hdf5").stat().st_size < 1_000_000

    def test_an_attribute_outside_the_checksum(self, runs, tmp_path, capsys):
        """A dataset's extra attribute was outside the checksum, and merged (issue 70)."""

        def change(hdf5):
            hdf5["5"].attrs["injected"] = "not maelmo-embed's"

        assert "has the attribute 'injected'" in self.merge_altered(runs, tmp_path, capsys, change)

    def test_a_soft_link_to_another_line(self, runs, tmp_path, capsys):
        message = self.merge_altered(
            runs, tmp_path, capsys, lambda hdf5: _replace_member(hdf5, "5", h5py.SoftLink("/6"))
        )
        assert "member '5' is an HDF5 SoftLink" in message

    def test_an_external_link_to_another_file(self, runs, tmp_path, capsys):
        other = str(runs / "whole.hdf5")
        message = self.merge_altered(
            runs, tmp_path, capsys, lambda hdf5: _replace_member(hdf5, "5", h5py.ExternalLink(other, "/5"))
        )
        assert "member '5' is an HDF5 ExternalLink" in message

    def test_an_external_dataset(self, runs, tmp_path, capsys):
        raw = tmp_path / "raw.bin"
        raw.write_bytes(b"\0" * 4096)

        def change(hdf5):
            shape, dtype = hdf5["5"].shape, hdf5["5"].dtype
            del hdf5["5"]
            hdf5.create_dataset("5", shape=shape, dtype=dtype, external=[(str(raw), 0, h5py.h5f.UNLIMITED)])

        assert "not a dataset stored in the file" in self.merge_altered(runs, tmp_path, capsys, change)

    def test_changed_values(self, runs, tmp_path, capsys):
        def change(hdf5):
            hdf5["5"][...] = hdf5["5"][()] + 1

        assert "was changed since maelmo-embed wrote it" in self.merge_altered(runs, tmp_path, capsys, change)

    @pytest.mark.parametrize("target", ["70", "6"])  # another shard's line; one of its own
    def test_a_poisoned_sentence_to_index(self, runs, tmp_path, capsys, target):
        def change(hdf5):
            index = json.loads(hdf5["sentence_to_index"][0])
            index[next(iter(index))] = target
            hdf5["sentence_to_index"][0] = json.dumps(index)

        message = self.merge_altered(runs, tmp_path, capsys, change)
        assert ("own lines 0 to 63" if target == "70" else "was changed since") in message

    def test_the_same_file_twice(self, runs, tmp_path, capsys):
        output = tmp_path / "out.hdf5"
        with pytest.raises(SystemExit):
            merge_cli(
                str(output), str(runs / "part0.hdf5"), str(runs / "part0.hdf5"), str(runs / "part1.hdf5")
            )
        assert "are the same file: give each shard once" in last_error_line(capsys)

    @pytest.mark.parametrize("planted", ["link_to_a_shard", "link_to_a_directory", "embed_partial", "file"])
    def test_a_partial_that_is_not_merges_own_is_left_as_it_is(self, runs, tmp_path, capsys, planted):
        shard = tmp_path / "part0.hdf5"
        shutil.copy(runs / "part0.hdf5", shard)
        before = shard.read_bytes()
        partial = tmp_path / "out.hdf5.partial"
        if planted == "link_to_a_shard":
            partial.symlink_to(shard)
        elif planted == "link_to_a_directory":
            (tmp_path / "folder").mkdir()
            partial.symlink_to(tmp_path / "folder")
        elif planted == "embed_partial":
            partial.mkdir()
            (partial / "job.json").write_text("{}")
        else:
            partial.write_text("a user's file")
        with pytest.raises(SystemExit) as exit_info:
            merge_cli(str(tmp_path / "out.hdf5"), str(shard), str(runs / "part1.hdf5"))
        assert exit_info.value.code == 2
        message = last_error_line(capsys)
        assert (
            "not the partial directory maelmo-merge writes" in message
            or "maelmo-merge does not write" in message
        )
        assert shard.read_bytes() == before and not (tmp_path / "out.hdf5").exists()
        assert os.path.lexists(partial)
        if planted == "link_to_a_directory":
            assert os.listdir(tmp_path / "folder") == []

    def test_a_killed_merges_partial_is_merges_own_and_the_merge_runs_again(self, runs, tmp_path):
        partial = tmp_path / "out.hdf5.partial"
        partial.mkdir()
        (partial / "lock").write_text("12345")
        (partial / "merged.hdf5").write_bytes(b"half a file")
        assert merge_shards(str(tmp_path / "out.hdf5"), [str(runs / "part0.hdf5"), str(runs / "part1.hdf5")])
        assert_same_vectors(tmp_path / "out.hdf5", runs / "whole.hdf5")
        assert not partial.exists()


def test_a_full_disk_while_merging_is_one_line_and_the_output_is_kept(runs, tmp_path, capsys):
    output = tmp_path / "out.hdf5"
    output.write_bytes(b"the previous merge")
    write_manifest(str(output), "maelmo-merge", directory=False)

    def no_space(path, output_file):
        raise OSError(28, "No space left on device")

    with mock.patch("maelmo_files.embedding.merge.copy_line_datasets", no_space):
        with pytest.raises(SystemExit):
            merge_cli(str(output), str(runs / "part0.hdf5"), str(runs / "part1.hdf5"), "--force")
    message = last_error_line(capsys)
    assert "failed (No space left on device)" in message and "unchanged" in message
    assert output.read_bytes() == b"the previous merge"
    assert not (tmp_path / "out.hdf5.partial").exists()


def test_a_folder_given_as_a_shard_is_named_as_a_folder(tmp_path):
    """Before: `No such shard file: 'd.hdf5'`, for a folder that is there."""
    (tmp_path / "d.hdf5").mkdir()
    with pytest.raises(Refusal, match="The shard '.*d.hdf5' is a directory: give the files maelmo-embed"):
        merge_shards(str(tmp_path / "m.hdf5"), [str(tmp_path / "d.hdf5")], False)
