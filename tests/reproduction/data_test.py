"""reproduction/data.py: the campaigns' text files, always the first lines of the WikiText-2 they are given."""

from pathlib import Path

from reproduction import data


def wikitext(folder: Path, words: str) -> Path:
    folder.mkdir(parents=True)
    for split in ("train", "valid"):
        (folder / f"{split}.txt").write_text("".join(f" {words} {i} .\n" for i in range(5000)))
    return folder


def test_each_kind_is_the_first_lines_of_its_split(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "RUNS", tmp_path / "runs")
    monkeypatch.setenv("WIKITEXT2_DIR", str(wikitext(tmp_path / "wikitext-2", "real")))
    monkeypatch.setenv("MAELMO_VOCAB", str(tmp_path / "vocab.txt"))
    for kind, lines, validation in (("subset", 4000, 1500), ("timing", 1200, 100), ("tiny", 100, 1500)):
        files = data.data_files(kind)
        assert Path(files["train"]).read_text().splitlines() == [f" real {i} ." for i in range(lines)]
        assert len(Path(files["validation"]).read_text().splitlines()) == validation
    assert data.data_files("full")["train"] == str((tmp_path / "wikitext-2" / "train.txt").resolve())
    assert not list((tmp_path / "runs").glob("*.partial"))


def test_a_file_left_by_another_wikitext_is_written_again_not_trained_on(tmp_path, monkeypatch):
    # A first WikiText-2 folder (a test's two lines, another copy) leaves its subset behind; the next campaign
    # names the real one: its runs must read the real one's first lines.
    monkeypatch.setattr(data, "RUNS", tmp_path / "runs")
    monkeypatch.setenv("MAELMO_VOCAB", str(tmp_path / "vocab.txt"))
    monkeypatch.setenv("WIKITEXT2_DIR", str(wikitext(tmp_path / "fixture", "fixture")))
    data.data_files("subset")
    monkeypatch.setenv("WIKITEXT2_DIR", str(wikitext(tmp_path / "wikitext-2", "real")))
    files = data.data_files("subset")
    assert Path(files["train"]).read_text().splitlines()[:2] == [" real 0 .", " real 1 ."]
    assert Path(files["validation"]).read_text().splitlines()[0] == " real 0 ."
