"""The reproduction package's tests, mirroring reproduction/."""

from tests import PROJECT_ROOT


def wikitext_here(tmp_path, monkeypatch):
    """A two-line WikiText-2 folder and the fixture vocabulary, as the campaigns' environment variables name them;
    returns the folder."""
    wikitext = tmp_path / "wikitext-2"
    wikitext.mkdir()
    for split in ("train", "valid"):
        (wikitext / f"{split}.txt").write_text(" = A = \n\nSome text .\n" * 3)
    monkeypatch.setenv("WIKITEXT2_DIR", str(wikitext))
    monkeypatch.setenv("MAELMO_VOCAB", str(PROJECT_ROOT / "tests" / "fixtures" / "lm" / "vocab.txt"))
    # The campaigns' text files derived from it go to the test's folder, never to the repository's runs/.
    monkeypatch.setattr("reproduction.data.RUNS", tmp_path / "runs")
    return wikitext
