"""
Bulk embedding with Ray Data on a local 2-CPU Ray cluster (`ray.init(num_cpus=2)`): every id exactly once, the
vectors `MaskedElmo.embed`'s, with the torch and the ONNX backends, and an actor killed mid-job. Ray is the
`ray` extra, which the test setup installs.
"""

import json
import os
import re
import sys

import numpy as np
import pytest

from maelmo_declarations.owned_outputs import MANIFEST, write_manifest
from maelmo_plugin.api import MaskedElmo

ray = pytest.importorskip("ray")
pq = pytest.importorskip("pyarrow.parquet")

from maelmo_declarations.refusals import Refusal  # noqa: E402
from maelmo_plugin.embedding import ray_data, ray_rows  # noqa: E402
from tests import file_tree  # noqa: E402

TEXTS = ["The king lived in Berlin.", "A cat sleeps on the mat.", "The dog eats a fish.", "Berlin."]


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def rows(tmp_path):
    """30 rows whose ids are not their order, some texts repeated."""
    path = tmp_path / "rows.jsonl"
    rows = [{"id": f"doc-{(7 * i) % 30}", "text": TEXTS[i % len(TEXTS)] + " " * (i % 3)} for i in range(30)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path, rows


def vectors_by_id(output_dir) -> dict[str, np.ndarray]:
    table = pq.read_table(str(output_dir))
    ids = table.column("id").to_pylist()
    assert len(ids) == len(set(ids)), "an id was written twice"
    return dict(zip(ids, np.array(table.column("vector").to_pylist(), dtype=np.float32)))


def expected(archive, rows, layer=-1) -> dict[str, np.ndarray]:
    vectors = MaskedElmo.from_archive(archive).embed(
        [row["text"] for row in rows], layer=layer, pool="sentence"
    )
    return {row["id"]: vector for row, vector in zip(rows, vectors)}


def assert_same(got, want, tolerance=1e-5):
    assert got.keys() == want.keys()  # every id exactly once
    for key in want:
        np.testing.assert_allclose(got[key], want[key], atol=tolerance, rtol=0)


def test_every_id_once_with_the_vectors_of_masked_elmo_embed(cluster, fill_mask_archive, rows, tmp_path):
    path, content = rows
    statements = []
    ray_data.embed_with_ray(
        str(path), str(tmp_path / "out"), fill_mask_archive, actors=2, layer="mix", report=statements.append
    )
    assert_same(vectors_by_id(tmp_path / "out"), expected(fill_mask_archive, content, layer="mix"))
    manifest = json.loads((tmp_path / "out" / MANIFEST).read_text())
    written = sorted(name for name in os.listdir(tmp_path / "out") if name != MANIFEST)
    assert manifest["command"] == ray_data.COMMAND and sorted(manifest["files"]) == written and written
    # The size stated before Ray started holds what Ray wrote (30 rows of 16 values: mostly files' structure).
    [statement] = statements
    stated = re.match(
        r"maelmo-ray-embed: 30 rows, one vector of 16 float32 values each: OUTPUT takes about ([\d.,]+) KB",
        statement,
    )
    assert stated, statement
    assert sum(manifest["files"].values()) <= float(stated.group(1)) * 1000
    assert "complete" not in manifest  # finished
    with pytest.raises(Refusal, match="give --force"):
        ray_data.embed_with_ray(str(path), str(tmp_path / "out"), fill_mask_archive)
    # --force replaces the files the job wrote, and nothing else: each id once, with the new layer's vectors.
    ray_data.embed_with_ray(str(path), str(tmp_path / "out"), fill_mask_archive, actors=2, force=True)
    assert_same(vectors_by_id(tmp_path / "out"), expected(fill_mask_archive, content))


class DyingOnce(ray_data.SentenceEmbedder):
    """Kills its own actor process on its first batch, once per job (a marker file says it happened)."""

    def __init__(self, marker: str, **options) -> None:
        super().__init__(**options)
        self._marker = marker

    def __call__(self, batch):
        if not os.path.exists(self._marker):
            open(self._marker, "w").close()
            os._exit(1)
        return super().__call__(batch)


# Ray's workers get this test's classes by value: they need not import the tests package.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.mark.slow  # CI runs it
def test_a_killed_actor_is_restarted_and_no_id_is_lost_or_doubled(
    cluster, fill_mask_archive, rows, tmp_path, monkeypatch
):
    path, content = rows
    marker = tmp_path / "died"
    monkeypatch.setattr(ray_data, "SentenceEmbedder", DyingOnce)
    dataset = ray.data.read_json(str(path), lines=True, num_cpus=0)
    table = ray_data.embed_dataset(
        dataset, fill_mask_archive, actors=2, ray_batch_size=8, marker=str(marker)
    ).materialize()
    assert marker.exists()
    got = {row["id"]: np.array(row["vector"], dtype=np.float32) for row in table.iter_rows()}
    assert len(got) == table.count() == len(content)
    assert_same(got, expected(fill_mask_archive, content))


@pytest.mark.slow  # CI runs it
def test_the_onnx_export_embeds_as_the_archive(cluster, fill_mask_archive, rows, tmp_path):
    from maelmo_plugin.onnx.export import export_onnx_archive

    export_onnx_archive(fill_mask_archive, str(tmp_path / "onnx"))
    path, content = rows
    ray_data.embed_with_ray(str(path), str(tmp_path / "out"), str(tmp_path / "onnx"), actors=1)
    assert_same(vectors_by_id(tmp_path / "out"), expected(fill_mask_archive, content), tolerance=1e-4)


def test_rows_without_ids_or_text_are_refused_naming_the_columns(fill_mask_archive):
    embedder = ray_data.SentenceEmbedder(fill_mask_archive)
    with pytest.raises(
        ValueError, match=r"The rows need the columns 'id' and 'text'; this batch has \['sentence'\]"
    ):
        embedder({"sentence": np.array(["A cat."])})
    with pytest.raises(ValueError, match="A plain text file has no ids"):
        ray_data.read_rows("sentences.txt")


def _jsonl(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "lines, message",
    [
        (['{"id": 1, "text": "A cat."}', '{"id": 2, "text": null}'], "row 2: the text is null"),
        (['{"id": 1, "text": "A cat."}', '{"id": 1, "text": "A dog."}'], "1 id is repeated \\(e.g. 1\\)"),
        (['{"id": 1, "text": "A cat."}', '{"id": "b", "text": "A dog."}'], "cannot be read as JSON lines"),
        (['{"id": 1, "text": 5}'], "the text column holds int64, not strings"),
        (['{"id": 1, "sentence": "A cat."}'], "has no 'text' column"),
        ([], "holds no row"),
    ],
)
def test_bad_rows_are_refused_before_ray_starts_naming_the_file(tmp_path, lines, message):
    path = _jsonl(tmp_path / "rows.jsonl", lines)
    with pytest.raises(ValueError, match=message):
        ray_rows.check_rows(path)


def test_parquet_rows_are_checked_and_good_rows_counted(tmp_path):
    import pyarrow

    pq.write_table(pyarrow.table({"id": [1, 2], "sentence": ["A.", "B."]}), tmp_path / "wrong.parquet")
    with pytest.raises(
        ValueError, match="wrong.parquet has no 'text' column \\(it has \\['id', 'sentence'\\]\\)"
    ):
        ray_rows.check_rows(str(tmp_path / "wrong.parquet"))
    pq.write_table(pyarrow.table({"id": ["a", "b"], "text": ["A.", "B."]}), tmp_path / "rows.parquet")
    assert ray_rows.check_rows(str(tmp_path / "rows.parquet")).to_pylist() == ["a", "b"]


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--layer", "top"], "argument --layer: an integer or 'mix', got 'top'"),
        (["--actors", "0"], "--actors needs at least 1"),
        (["--model", "missing.tar.gz"], "No such model: 'missing.tar.gz'"),
        ([], "row 2: the text is null"),
    ],
)
def test_the_command_line_refuses_in_one_line_before_ray_starts(
    fill_mask_archive, tmp_path, capsys, monkeypatch, arguments, message
):
    monkeypatch.setattr(ray, "init", lambda *args, **kwargs: pytest.fail("Ray was started"))
    rows = _jsonl(tmp_path / "rows.jsonl", ['{"id": 1, "text": "A cat."}', '{"id": 2, "text": null}'])
    with pytest.raises(SystemExit) as exit_info:
        ray_data.main([rows, str(tmp_path / "out"), "--model", fill_mask_archive, *arguments])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "Traceback" not in error and message in error.strip().splitlines()[-1]
    assert not (tmp_path / "out").exists()


def test_a_json_lines_job_with_a_checkpoint_is_refused_saying_how_to_start_afresh(tmp_path, monkeypatch):
    monkeypatch.setattr(ray, "init", lambda *args, **kwargs: pytest.fail("Ray was started"))
    rows = _jsonl(tmp_path / "rows.jsonl", ['{"id": 1, "text": "A cat."}'])
    (tmp_path / "out" / ".checkpoint").mkdir(parents=True)
    write_manifest(str(tmp_path / "out"), ray_data.COMMAND, files=[], complete=False)  # the job's, unfinished
    with pytest.raises(ValueError, match="resumes from Parquet input only: convert .* or move .* away"):
        ray_data.embed_with_ray(rows, str(tmp_path / "out"), "model.tar.gz")


def test_an_onnx_directory_without_its_tokenizer_is_refused_naming_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(ray, "init", lambda *args, **kwargs: pytest.fail("Ray was started"))
    rows = _jsonl(tmp_path / "rows.jsonl", ['{"id": 1, "text": "A cat."}'])
    (tmp_path / "onnx").mkdir()
    (tmp_path / "onnx" / "model.onnx").write_bytes(b"a model")
    with pytest.raises(ValueError, match="onnx has no tokenizer.json, which the ONNX runner reads"):
        ray_data.embed_with_ray(rows, str(tmp_path / "out"), str(tmp_path / "onnx"))


def _written(directory, ids):
    import pyarrow

    directory.mkdir(parents=True, exist_ok=True)
    vectors = pyarrow.FixedSizeListArray.from_arrays(pyarrow.array([0.5] * len(ids), pyarrow.float32()), 1)
    pq.write_table(pyarrow.table({"id": ids, "vector": vectors}), directory / "part_000000.parquet")


def test_a_finished_output_with_a_stray_checkpoint_is_not_appended_to(tmp_path, monkeypatch):
    monkeypatch.setattr(ray, "init", lambda *args, **kwargs: pytest.fail("Ray was started"))
    rows = _jsonl(tmp_path / "rows.jsonl", ['{"id": 1, "text": "A cat."}', '{"id": 2, "text": "A dog."}'])
    _written(tmp_path / "out", [1, 2])
    write_manifest(
        str(tmp_path / "out"), ray_data.COMMAND, files=[], complete=False
    )  # stopped before listing
    (tmp_path / "out" / ".checkpoint").mkdir()  # left from an earlier run: every id is written already
    with pytest.raises(Refusal, match="holds the vectors of a finished job: give --force"):
        ray_data.embed_with_ray(rows, str(tmp_path / "out"), "model.tar.gz")
    assert sorted(os.listdir(tmp_path / "out")) == [".checkpoint", MANIFEST, "part_000000.parquet"]


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("case", ["notes", "users_parquet", "the_input_folder", "inside_the_input_folder"])
def test_a_folder_the_job_did_not_write_is_refused_and_kept(tmp_path, monkeypatch, force, case):
    """
    `--force` once emptied the input folder when given as the output, and deleted a user's own Parquet file
    (issue 70): a folder is the job's only by its manifest, and never overlaps the input.
    """
    monkeypatch.setattr(ray, "init", lambda *args, **kwargs: pytest.fail("Ray was started"))
    import pyarrow

    (tmp_path / "rows").mkdir()
    pq.write_table(
        pyarrow.table({"id": [1, 2], "text": ["A cat.", "A dog."]}), tmp_path / "rows" / "a.parquet"
    )
    _written(tmp_path / "out", [1])  # a user's own Parquet file, written by another tool
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "notes.txt").write_text("the user's notes")
    output = {"notes": "notes", "users_parquet": "out", "the_input_folder": "rows"}.get(case, "rows/out")
    message = {
        "the_input_folder": "is the input",
        "inside_the_input_folder": "lies inside the input",
    }.get(case, "maelmo-ray-embed did not write")
    before = file_tree(tmp_path)
    with pytest.raises(ValueError, match=message):
        ray_data.embed_with_ray(str(tmp_path / "rows"), str(tmp_path / output), "model.tar.gz", force=force)
    assert file_tree(tmp_path) == before and not (tmp_path / "rows" / "out").exists()


def test_parquet_input_with_actors_holding_every_cpu_is_refused_not_left_waiting(
    cluster, fill_mask_archive, tmp_path
):
    import pyarrow

    pq.write_table(pyarrow.table({"id": [1, 2], "text": ["A cat.", "A dog."]}), tmp_path / "rows.parquet")
    with pytest.raises(ValueError, match="2 actors of 1 CPU take every CPU of the Ray cluster \\(2\\)"):
        ray_data.embed_with_ray(
            str(tmp_path / "rows.parquet"), str(tmp_path / "out"), fill_mask_archive, actors=2
        )
    assert not (tmp_path / "out").exists()


def test_ctrl_c_in_the_ray_command_is_one_line(tmp_path, capsys, monkeypatch):
    rows = _jsonl(tmp_path / "rows.jsonl", ['{"id": 1, "text": "A cat."}'])
    model = tmp_path / "model.tar.gz"  # only checked to exist: the job itself is interrupted
    model.write_bytes(b"an archive")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ray_data, "embed_with_ray", interrupted)
    with pytest.raises(SystemExit) as exit_info:
        ray_data.main([rows, str(tmp_path / "out"), "--model", str(model)])
    error = capsys.readouterr().err
    assert exit_info.value.code == 130 and "Traceback" not in error
    assert error.strip() == "Interrupted: run the same command again to continue the job."


@pytest.mark.parametrize(
    "case, message",
    [
        ("a blank text", r"rows.jsonl, row 2: the text is empty"),
        (
            "a layer the model lacks",
            r"--layer|an integer from -3 to 2 \(the model has L \+ 1 = 3 layers\), got 9",
        ),
        ("a damaged archive", r"damaged.tar.gz"),
        ("a code-running archive", r"poisoned.tar.gz"),
    ],
)
def test_what_the_actors_would_fail_on_is_refused_before_ray_starts(
    fill_mask_archive, tmp_path, capsys, monkeypatch, case, message
):
    """Ray checked these only inside its actors (78 to 490 lines each) and left OUTPUT/.checkpoint (issue 70)."""
    from tests.common.integrity_test import _flip_a_weight, _repacked
    from tests.safe_loading_test import save_code_running_pickle

    monkeypatch.setattr(ray, "init", lambda *args, **kwargs: pytest.fail("Ray was started"))
    texts = [
        '{"id": 1, "text": "A cat."}',
        '{"id": 2, "text": "  "}' if case == "a blank text" else '{"id": 2, "text": "A dog."}',
    ]
    rows = _jsonl(tmp_path / "rows.jsonl", texts)
    model, arguments = fill_mask_archive, []
    if case == "a layer the model lacks":
        arguments = ["--layer", "9"]
    elif case == "a damaged archive":
        model = _repacked(fill_mask_archive, tmp_path / "damaged.tar.gz", _flip_a_weight)
    elif case == "a code-running archive":

        def poison(members):
            save_code_running_pickle(tmp_path / "weights.th", tmp_path / "code_ran.txt")
            members["weights.th"] = (tmp_path / "weights.th").read_bytes()

        model = _repacked(fill_mask_archive, tmp_path / "poisoned.tar.gz", poison)
    before = file_tree(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        ray_data.main([rows, str(tmp_path / "out"), "--model", model, *arguments])
    error = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in error, error[-3000:]
    assert re.search(message, error.strip().splitlines()[-1]), error[-3000:]
    assert not (tmp_path / "code_ran.txt").exists()
    assert file_tree(tmp_path) == before and not (tmp_path / "out").exists()


def test_a_disk_that_cannot_hold_the_vectors_is_refused_before_ray_starts(
    fill_mask_archive, tmp_path, monkeypatch
):
    from maelmo_plugin.embedding import output_size

    monkeypatch.setattr(ray, "init", lambda *args, **kwargs: pytest.fail("Ray was started"))
    monkeypatch.setattr(output_size.shutil, "disk_usage", lambda path: shutil_usage(free=100_000))
    rows = _jsonl(tmp_path / "rows.jsonl", [f'{{"id": {i}, "text": "A cat."}}' for i in range(2000)])
    before = file_tree(tmp_path)
    with pytest.raises(
        Refusal,
        match=r"maelmo-ray-embed needs about 1\d\d\.\d KB free in .* \(OUTPUT about 1\d\d\.\d KB: 2,000 rows, one "
        r"vector of 16 float32 values each\), and it has 100\.0 KB: free space, or embed the rows in parts",
    ):
        ray_data.embed_with_ray(rows, str(tmp_path / "out"), fill_mask_archive)
    assert file_tree(tmp_path) == before


def shutil_usage(free):
    import shutil

    return shutil._ntuple_diskusage(total=10 * free, used=9 * free, free=free)


@pytest.mark.parametrize("ids", ["strings", "integers"])
def test_the_stated_size_holds_parquet_files_of_256_rows_as_ray_writes_them(tmp_path, ids):
    """pyarrow's writer with the arguments Ray Data passes it, one file per block of 256 rows; within 2%."""
    import pyarrow

    from maelmo_plugin.embedding.output_size import measure_row_vectors

    rows, dim = 2000, 768
    vectors = np.random.default_rng(0).standard_normal((rows, dim), dtype=np.float32)
    id_values = [f"document-{i}" for i in range(rows)] if ids == "strings" else list(range(rows))
    for start in range(0, rows, 256):
        table = pyarrow.table(
            {
                "id": pyarrow.array(id_values[start : start + 256]),
                "vector": pyarrow.FixedSizeListArray.from_arrays(
                    pyarrow.array(vectors[start : start + 256].ravel()), dim
                ),
            }
        )
        pq.write_table(table, tmp_path / f"{start}.parquet", use_dictionary=["id"])
    written = sum(os.path.getsize(tmp_path / name) for name in os.listdir(tmp_path))
    estimate = measure_row_vectors(pyarrow.array(id_values), dim, str(tmp_path)).total_bytes
    assert written <= estimate <= 1.02 * written, (written, estimate)


def test_the_command_line_states_the_size_and_refuses_a_full_disk_in_one_line(
    fill_mask_archive, tmp_path, capsys, monkeypatch
):
    from maelmo_plugin.embedding import output_size

    monkeypatch.setattr(ray, "init", lambda *args, **kwargs: pytest.fail("Ray was started"))
    monkeypatch.setattr(output_size.shutil, "disk_usage", lambda path: shutil_usage(free=100_000))
    rows = _jsonl(tmp_path / "rows.jsonl", [f'{{"id": {i}, "text": "A cat."}}' for i in range(2000)])
    with pytest.raises(SystemExit) as exit_info:
        ray_data.main([rows, str(tmp_path / "out"), "--model", fill_mask_archive])
    error = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in error
    lines = error.strip().splitlines()
    assert any(
        line.startswith("maelmo-ray-embed: 2,000 rows, one vector of 16 float32 values each")
        for line in lines
    )
    assert (
        "maelmo-ray-embed needs about" in lines[-1] and "free space, or embed the rows in parts" in lines[-1]
    )
    assert not (tmp_path / "out").exists()
