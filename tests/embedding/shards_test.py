"""`maelmo-embed --shard K/N` and `maelmo-merge`: the parts of one input, joined into the unsharded file."""

import json
import shutil
from unittest import mock

import h5py
import pytest
from allennlp.common.checks import ConfigurationError

from maelmo_plugin.embedding.merge import merge_shards
from maelmo_plugin.embedding.shards import SHARD_ATTRIBUTE, Shard
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


def test_more_shards_than_windows_leave_empty_shards_that_merge(fill_mask_archive, runs, tmp_path):
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
        with pytest.raises(ConfigurationError, match="exists; give --force"):
            merge_shards(str(existing), [str(runs / "part0.hdf5"), str(runs / "part1.hdf5")])
        assert existing.read_bytes() == b"precious"


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
