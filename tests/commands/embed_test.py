import json
from unittest import mock

import h5py
import numpy as np
import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import Archive
from allennlp.predictors import Predictor

from maelmo_plugin.embedding import embed_file
from tests import run_allennlp_in_process
from tests.common.text_files_test import VARIANTS, write_compressed

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A cat sleeps.",
    "The unbelievable king lived in Berlin.",
]


@pytest.fixture
def input_file(tmp_path):
    path = tmp_path / "sentences.txt"
    path.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    return path


def predictor(archive: Archive, **options):
    return Predictor.from_archive(archive, "maelmo_representations", extra_args=options)


def test_hdf5_holds_the_predictors_vectors_in_allennlp_elmos_layout(fill_mask_loaded, input_file, tmp_path):
    output_file = tmp_path / "vectors.hdf5"
    assert embed_file(predictor(fill_mask_loaded), str(input_file), str(output_file), batch_size=2) == 3
    # The same batches as embed_file's (batch_size=2): a row's vectors depend on its batch's padding by float
    # rounding (up to about 3e-5 through two LSTM layers), which is not what this test is about.
    inputs = [{"sentence": sentence} for sentence in SENTENCES]
    expected = predictor(fill_mask_loaded).predict_batch_json(inputs[:2]) + predictor(
        fill_mask_loaded
    ).predict_batch_json(inputs[2:])
    with h5py.File(output_file, "r") as hdf5:
        assert set(hdf5.keys()) == {"0", "1", "2", "sentence_to_index"}
        assert json.loads(hdf5["sentence_to_index"][0]) == {
            sentence: str(i) for i, sentence in enumerate(SENTENCES)
        }
        for index, output in enumerate(expected):
            dataset = hdf5[str(index)]
            assert dataset.shape == (3, len(output["wordpieces"]), 16) and dataset.dtype == np.float32
            np.testing.assert_allclose(dataset[()], np.array(output["vectors"]), rtol=1e-5, atol=1e-5)
            assert list(dataset.attrs["tokens"]) == output["wordpieces"]


def test_one_layer_pooled_into_words(fill_mask_loaded, input_file, tmp_path):
    output_file = tmp_path / "vectors.hdf5"
    embed_file(predictor(fill_mask_loaded, layer="mix", pool="mean"), str(input_file), str(output_file))
    expected = predictor(fill_mask_loaded, layer="mix", pool="mean").predict_json({"sentence": SENTENCES[2]})
    with h5py.File(output_file, "r") as hdf5:
        assert hdf5["2"].shape == (len(expected["words"]), 16) == (7, 16)
        assert list(hdf5["2"].attrs["tokens"]) == expected["words"]
        np.testing.assert_allclose(hdf5["2"][()], np.array(expected["vectors"]), rtol=1e-5, atol=1e-5)


def test_one_vector_per_line_with_sentence_pooling(fill_mask_loaded, input_file, tmp_path):
    output_file = tmp_path / "vectors.hdf5"
    embed_file(predictor(fill_mask_loaded, layer=-1, pool="sentence"), str(input_file), str(output_file))
    expected = predictor(fill_mask_loaded, layer=-1, pool="sentence").predict_json({"sentence": SENTENCES[1]})
    with h5py.File(output_file, "r") as hdf5:
        assert hdf5["1"].shape == (16,)
        assert list(hdf5["1"].attrs["tokens"]) == expected["wordpieces"]  # the pieces averaged
        np.testing.assert_allclose(hdf5["1"][()], np.array(expected["vectors"]), rtol=1e-5, atol=1e-5)


def test_streams_one_batch_of_vectors_at_a_time(fill_mask_loaded, tmp_path):
    input_file = tmp_path / "many.txt"
    input_file.write_text("\n".join(SENTENCES * 5) + "\n", encoding="utf-8")
    streaming = predictor(fill_mask_loaded)
    batch_sizes = []
    original = streaming.vectors

    def recording(instances):
        batch_sizes.append(len(instances))
        return original(instances)

    with mock.patch.object(streaming, "vectors", recording):
        embed_file(streaming, str(input_file), str(tmp_path / "out.hdf5"), batch_size=4)
    assert batch_sizes == [4, 4, 4, 3]
    with h5py.File(tmp_path / "out.hdf5", "r") as hdf5:
        assert len(hdf5.keys()) == 16
        # A repeated sentence maps to its last line, as in `allennlp elmo`.
        assert json.loads(hdf5["sentence_to_index"][0])[SENTENCES[0]] == "12"


@pytest.mark.parametrize(
    "content, message",
    [
        (b"A cat.\n\nA dog.\n", r"line 2 of .*many.txt is empty"),
        (b"A cat.\n   \n", r"line 2 of .*many.txt is empty"),
        (b"A cat.\nA \xff dog.\n", r"many.txt, line 2: not valid UTF-8 .* `iconv -f LATIN1"),
        (b"", r"many.txt has no lines"),
        (b"A cat.\n\x00\x01\n", r"line 2 of .*many.txt gives no word-piece"),
        (b"A cat.\nThe [PAD] dog.\n", r"line 2 of .*many.txt contains \[PAD\]"),
    ],
)
def test_bad_lines_are_clear_errors_and_leave_no_output(fill_mask_loaded, tmp_path, content, message):
    input_file = tmp_path / "many.txt"
    input_file.write_bytes(content)
    output_file = tmp_path / "out.hdf5"
    with pytest.raises((ValueError, ConfigurationError), match=message):
        embed_file(predictor(fill_mask_loaded), str(input_file), str(output_file))
    assert not output_file.exists() and not (tmp_path / "out.hdf5.partial").exists()


@pytest.mark.parametrize("kind, name", VARIANTS[1:])
def test_a_compressed_input_gives_the_vectors_of_its_text(fill_mask_loaded, input_file, tmp_path, kind, name):
    compressed = write_compressed(tmp_path / name, input_file.read_text(encoding="utf-8"), kind)
    plain_output, output = tmp_path / "plain.hdf5", tmp_path / "compressed.hdf5"
    embed_file(predictor(fill_mask_loaded), str(input_file), str(plain_output), batch_size=2)
    assert embed_file(predictor(fill_mask_loaded), str(compressed), str(output), batch_size=2) == 3
    with h5py.File(plain_output, "r") as expected, h5py.File(output, "r") as hdf5:
        assert set(hdf5.keys()) == set(expected.keys())
        assert hdf5["sentence_to_index"][0] == expected["sentence_to_index"][0]
        for index in ("0", "1", "2"):
            np.testing.assert_array_equal(hdf5[index][()], expected[index][()])
            assert list(hdf5[index].attrs["tokens"]) == list(expected[index].attrs["tokens"])


def test_a_byte_order_mark_is_not_part_of_the_first_sentence(fill_mask_loaded, input_file, tmp_path):
    with_bom = tmp_path / "bom.txt"
    with_bom.write_bytes(b"\xef\xbb\xbf" + input_file.read_bytes())
    plain_output, output = tmp_path / "plain.hdf5", tmp_path / "bom.hdf5"
    embed_file(predictor(fill_mask_loaded), str(input_file), str(plain_output), batch_size=2)
    embed_file(predictor(fill_mask_loaded), str(with_bom), str(output), batch_size=2)
    with h5py.File(plain_output, "r") as expected, h5py.File(output, "r") as hdf5:
        assert json.loads(hdf5["sentence_to_index"][0]) == {
            sentence: str(i) for i, sentence in enumerate(SENTENCES)
        }
        np.testing.assert_array_equal(hdf5["0"][()], expected["0"][()])


class TestMaelmoEmbedCommand:
    def run_cli(self, *args: str) -> None:
        run_allennlp_in_process("maelmo-embed", *args)

    def refused(self, capsys, *args: str) -> str:
        with pytest.raises(SystemExit) as exit_info:
            self.run_cli(*args)
        error = capsys.readouterr().err
        assert exit_info.value.code == 2 and "Traceback" not in error
        return error.strip().splitlines()[-1]

    @pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a visible GPU")
    def test_a_gpu_that_is_not_there_is_refused_before_the_model_loads(self, input_file, tmp_path, capsys):
        archive = tmp_path / "model.tar.gz"  # never opened: the device is checked before the model loads
        archive.write_bytes(b"an archive")
        with mock.patch("maelmo_plugin.commands.embed.load_language_model_archive") as load:
            message = self.refused(
                capsys, str(archive), str(input_file), str(tmp_path / "out.hdf5"), "--cuda-device", "0"
            )
        assert "--cuda-device 0: this process sees 0 CUDA GPUs" in message and "-1 for the CPU" in message
        assert not load.called and not (tmp_path / "out.hdf5.partial").exists()

    def test_bert_embeds_and_a_line_beyond_its_positions_is_named(self, bert_lm_archive, tmp_path, capsys):
        input_file = tmp_path / "lines.txt"
        input_file.write_text("A cat sleeps.\n" + "cat " * 600 + "\n", encoding="utf-8")
        message = self.refused(capsys, bert_lm_archive, str(input_file), str(tmp_path / "out.hdf5"))
        assert f"line 2 of {input_file} is 602 word-pieces long" in message and "512 positions" in message
        input_file.write_text("A cat sleeps.\nThe dog eats.\n", encoding="utf-8")
        self.run_cli(bert_lm_archive, str(input_file), str(tmp_path / "out.hdf5"), "--layer", "-1")
        with h5py.File(tmp_path / "out.hdf5", "r") as hdf5:
            assert hdf5["0"].shape == (6, 16)  # [CLS] A cat sleeps . [SEP]: BERT*'s top layer

    def test_writes_the_hdf5(self, fill_mask_archive, input_file, tmp_path, capsys):
        output_file = tmp_path / "vectors.hdf5"
        self.run_cli(
            fill_mask_archive, str(input_file), str(output_file), "--batch-size", "2", "--layer", "-1"
        )
        assert f"Wrote the vectors of 3 sentences to {output_file}" in capsys.readouterr().out
        with h5py.File(output_file, "r") as hdf5:
            assert hdf5["1"].shape == (6, 16)  # [CLS] A cat sleeps . [SEP], the top layer

    def test_an_empty_line_exits_with_a_message(self, fill_mask_archive, tmp_path, capsys):
        input_file = tmp_path / "blank.txt"
        input_file.write_text("A cat.\n\n", encoding="utf-8")
        with pytest.raises(SystemExit) as exit_info:
            self.run_cli(fill_mask_archive, str(input_file), str(tmp_path / "out.hdf5"))
        assert exit_info.value.code == 2
        error = capsys.readouterr().err
        assert "line 2 of" in error and "is empty" in error and "Traceback" not in error

    def test_a_bad_layer_exits_with_a_message(self, fill_mask_archive, input_file, tmp_path, capsys):
        with pytest.raises(SystemExit):
            self.run_cli(fill_mask_archive, str(input_file), str(tmp_path / "out.hdf5"), "--layer", "top")
        assert "an integer or 'mix', got 'top'" in capsys.readouterr().err

    def test_reduced_precision(self, fill_mask_archive, input_file, tmp_path):
        outputs = {}
        for precision in ("fp32", "int8"):
            outputs[precision] = tmp_path / f"{precision}.hdf5"
            self.run_cli(
                fill_mask_archive, str(input_file), str(outputs[precision]), "--precision", precision
            )
        with h5py.File(outputs["fp32"], "r") as exact, h5py.File(outputs["int8"], "r") as reduced:
            for index in ("0", "1", "2"):
                assert reduced[index].shape == exact[index].shape
                np.testing.assert_allclose(reduced[index][()], exact[index][()], atol=2.0)
                assert not np.array_equal(reduced[index][()], exact[index][()])

    @pytest.mark.parametrize("kind, resolved", [("masked_elmo", "int8"), ("bert_star", "fp32")])
    def test_auto_precision_runs_through_the_command_line_on_every_archive_kind(
        self, request, input_file, tmp_path, kind, resolved
    ):
        """`--precision auto` once died on an assertion, on every archive kind (issue 70): no test ran it."""
        archive = request.getfixturevalue(
            {"masked_elmo": "fill_mask_archive", "bert_star": "bert_lm_archive"}[kind]
        )
        for precision in ("auto", resolved):
            self.run_cli(
                archive, str(input_file), str(tmp_path / f"{precision}.hdf5"), "--precision", precision
            )
        with (
            h5py.File(tmp_path / "auto.hdf5", "r") as auto,
            h5py.File(tmp_path / f"{resolved}.hdf5", "r") as same,
        ):
            for index in ("0", "1", "2"):
                np.testing.assert_array_equal(auto[index][()], same[index][()])

    def test_a_bad_precision_exits_with_a_message(self, fill_mask_archive, input_file, tmp_path, capsys):
        with pytest.raises(SystemExit):
            self.run_cli(
                fill_mask_archive, str(input_file), str(tmp_path / "out.hdf5"), "--precision", "fp16"
            )
        error = capsys.readouterr().err
        assert "argument --precision: invalid choice: 'fp16'" in error and "'int8', 'bf16', 'auto'" in error


@pytest.mark.parametrize(
    "layer, pool", [(None, None), (0, None), ("mix", None), (None, "first"), (-1, "mean"), (None, "sentence")]
)
def test_a_line_of_any_length_keeps_its_tokens_in_every_mode(fill_mask_loaded, tmp_path, layer, pool):
    # A document on one line, of 4,200 words: its `tokens` attribute (16 bytes per variable-length string)
    # passes HDF5's 64 KiB object-header limit, where writing it failed after all the work was done.
    long_line = " ".join(["The cat sleeps on the mat and the dog eats a fish."] * 350)
    input_file = tmp_path / "long.txt"
    input_file.write_text(f"A cat sleeps.\n{long_line}\n", encoding="utf-8")
    output_file = tmp_path / "vectors.hdf5"
    embedder = predictor(fill_mask_loaded, layer=layer, pool=pool)
    assert embed_file(embedder, str(input_file), str(output_file)) == 2
    sentence = embedder.sentence_instances([long_line], ["the long line"])[0]["sentence"].metadata
    tokens = sentence.words if pool in ("first", "mean") else sentence.wordpieces
    assert len(tokens) * 16 > 65536
    shape = (3, 16) if pool == "sentence" else (3, len(tokens), 16)
    with h5py.File(output_file, "r") as hdf5:
        assert list(hdf5["1"].attrs["tokens"]) == tokens
        assert hdf5["1"].shape == (shape if layer is None else shape[1:])
        assert np.isfinite(hdf5["1"][()]).all()
        assert json.loads(hdf5["sentence_to_index"][0]) == {"A cat sleeps.": "0", long_line: "1"}
