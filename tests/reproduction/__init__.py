"""The reproduction package's tests, mirroring reproduction/."""

import json

from allennlp.common import Params

from reproduction import runner
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


def run_config(claim: str, run: dict) -> dict:
    """The config that the campaign `claim` writes for `run` (`runner.variant`), as AllenNLP reads it."""
    return Params.from_file(str(runner.variant(claim, run))).as_dict()


def budget_curve(final: float, before: float) -> list:
    """Validations every 250 updates up to the 2 epochs' 2,494; `before` at update 2,250, `final` at the end."""
    points = [(updates, 1000.0 - updates / 10) for updates in range(250, 2250, 250)] + [
        (2250, before),
        (2494, final),
    ]
    return [
        {
            "updates": updates,
            "wordpieces": 2048 * updates,
            "cpu_seconds": 0.5 * updates,
            "perplexity": perplexity,
        }
        for updates, perplexity in points
    ]


def budget_kept(results, finals: dict) -> None:
    """Kept runs of BERT*'s budget (e), {recipe name: (final, before)}; the recipe it shares with the arena is written
    where the arena keeps its record (bert_tuning_recipe-seed1)."""
    for name, (final, before) in finals.items():
        run = results / (
            "arena_encoders/bert_tuning_recipe-seed1"
            if name == "post-lr1e-3-warmup250-linear"
            else f"bert_budget/{name}"
        )
        run.mkdir(parents=True)
        (run / "validation_curve.json").write_text(json.dumps(budget_curve(final, before)))
