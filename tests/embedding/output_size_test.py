"""`maelmo_plugin/embedding/output_size.py`: the output's size, stated before a run and refused beyond the disk."""

import os
from collections import namedtuple
from unittest import mock

import h5py
import numpy as np
import pytest
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from maelmo_declarations.refusals import Refusal
from maelmo_plugin.embedding import embed_file
from maelmo_plugin.embedding.output_size import measure_output
from maelmo_plugin.lm.predictors.representations import RepresentationsPredictor
from tests import run_allennlp_in_process
from tests.embedding.job_test import crashing_after

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A cat sleeps.",
    "The unbelievable king lived in Berlin, where the river flows slowly past the old houses.",
] * 20


@pytest.fixture
def input_file(tmp_path):
    path = tmp_path / "sentences.txt"
    path.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    return str(path)


def predictor(archive, **options):
    return Predictor.from_archive(archive, "maelmo_representations", extra_args=options)


@pytest.mark.parametrize(
    "layer, pool, storage",
    [
        (None, None, "float32"),
        (None, None, "float16"),
        (-1, None, "float32"),
        ("mix", "mean", "float32"),
        (None, "first", "float16"),
        (-1, "sentence", "float32"),
    ],
)
def test_the_size_counts_the_vectors_exactly_and_the_file_from_above(
    fill_mask_loaded, input_file, tmp_path, layer, pool, storage
):
    representations = predictor(fill_mask_loaded, layer=layer, pool=pool)
    output = str(tmp_path / "vectors.hdf5")
    size = measure_output(representations, input_file, range(len(SENTENCES)), storage, 4, output)
    embed_file(representations, input_file, output, batch_size=2, storage=storage)
    with h5py.File(output, "r") as vectors:
        datasets = [vectors[str(line)] for line in range(len(SENTENCES))]
        assert size.vector_bytes == sum(dataset.nbytes for dataset in datasets)
        assert all(dataset.dtype == np.dtype(storage) for dataset in datasets)
        shapes = [
            representations.vector_shape(i) for i in representations.sentence_instances(SENTENCES, SENTENCES)
        ]
        assert shapes == [dataset.shape for dataset in datasets]
    assert size.lines == len(SENTENCES)
    # HDF5's own bytes are estimated from measured costs rounded up: never below the file, not far above.
    assert 1.0 <= size.total_bytes / os.path.getsize(output) <= 1.25


def test_float16_stores_the_float32_vectors_rounded_in_half_the_bytes(fill_mask_loaded, input_file, tmp_path):
    files = {}
    for storage in ("float32", "float16"):
        files[storage] = str(tmp_path / f"{storage}.hdf5")
        embed_file(predictor(fill_mask_loaded), input_file, files[storage], batch_size=2, storage=storage)
    with h5py.File(files["float32"], "r") as full, h5py.File(files["float16"], "r") as half:
        for line in range(len(SENTENCES)):
            wide, narrow = full[str(line)][()], half[str(line)][()]
            assert narrow.dtype == np.float16 and narrow.nbytes * 2 == wide.nbytes
            assert np.array_equal(
                narrow, wide.astype(np.float16)
            )  # the same batches: only the rounding differs
            assert list(full[str(line)].attrs["tokens"]) == list(half[str(line)].attrs["tokens"])


def test_a_disk_that_cannot_hold_the_output_is_refused_before_any_vector(
    fill_mask_loaded, input_file, tmp_path
):
    output = str(tmp_path / "vectors.hdf5")
    representations = predictor(fill_mask_loaded)
    computed = mock.patch.object(representations, "vectors", side_effect=AssertionError("computed"))
    tight = namedtuple("usage", "total used free")(10**6, 10**6 - 5000, 5000)
    with (
        mock.patch("maelmo_plugin.embedding.output_size.shutil.disk_usage", return_value=tight),
        computed,
        pytest.raises(Refusal, match=r"needs about .* free in .* and it has 5.0 KB: .*--storage float16"),
    ):
        embed_file(representations, input_file, output)
    assert sorted(os.listdir(tmp_path)) == ["sentences.txt"]  # no output, no partial


def test_a_stopped_run_needs_what_its_batches_do_not_hold_yet(fill_mask_loaded, input_file, tmp_path):
    output = str(tmp_path / "vectors.hdf5")
    size = measure_output(
        predictor(fill_mask_loaded), input_file, range(len(SENTENCES)), "float32", 4, output
    )
    assert size.needed_bytes == 2 * size.total_bytes  # the batches, then their joined copy
    half = measure_output(
        predictor(fill_mask_loaded),
        input_file,
        range(len(SENTENCES)),
        "float32",
        4,
        output,
        size.total_bytes // 2,
    )
    assert half.needed_bytes == size.total_bytes - size.total_bytes // 2 + size.total_bytes


def test_the_command_states_the_size_and_a_partial_of_another_storage_is_refused(
    fill_mask_archive, input_file, tmp_path, capsys
):
    output = str(tmp_path / "vectors.hdf5")
    stop = mock.patch.object(RepresentationsPredictor, "vectors", crashing_after(1))
    with stop, pytest.raises(RuntimeError):  # a float16 run stopped after its first batch leaves its partial
        run_allennlp_in_process(
            "maelmo-embed", fill_mask_archive, input_file, output, "--storage", "float16", "--batch-size", "4"
        )
    error = capsys.readouterr().err
    assert f"maelmo-embed: {len(SENTENCES)} lines, " in error and "(float16, " in error
    assert "joining its batches needs about" in error
    assert os.path.isdir(output + ".partial")
    with pytest.raises(Refusal, match=r"storage: 'float16' then, 'float32' now"):
        embed_file(predictor(load_archive(fill_mask_archive)), input_file, output, batch_size=4)


def test_a_value_beyond_float16_is_refused_rather_than_stored_as_infinity():
    from maelmo_plugin.embedding.workers import stored

    vectors = np.array([[1.0, 70000.0]], dtype=np.float32)
    with pytest.raises(Refusal, match=r"line 4 has a vector value beyond float16's range \(65,504\)"):
        stored(vectors, "float16", 3)
    assert stored(vectors, "float32", 3) is vectors
    assert stored(np.array([1.0, 65504.0], dtype=np.float32), "float16", 0).dtype == np.float16
