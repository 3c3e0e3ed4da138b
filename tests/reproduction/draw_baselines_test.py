"""reproduction/draw_baselines.py (through draw_report.py): the sweep's table and figure, on hand-made curves."""

import json

from reproduction import draw_baselines, draw_report, tuning
from reproduction.arena import BERT_BUDGET, bert_budget_name
from tests.reproduction import budget_kept


def write(tmp_path, name, perplexities, forward=False):
    run = tmp_path / "results" / "tuning" / name
    run.mkdir(parents=True)
    points = [
        {
            "updates": 50 * (i + 1),
            "epoch": 0,
            "wordpieces": 1000 * (i + 1),
            "cpu_seconds": i + 1.0,
            "perplexity": p,
            **({"forward_perplexity": p} if forward else {}),
        }
        for i, p in enumerate(perplexities)
    ]
    (run / "validation_curve.json").write_text(json.dumps(points))


def test_each_encoder_gets_its_lowest_final_perplexity_and_the_grids_edge_is_flagged(tmp_path):
    write(tmp_path, "masked_elmo-lr5e-4", [300, 200, 150])
    write(tmp_path, "masked_elmo-lr1e-3", [250, 150, 110])
    write(tmp_path, "masked_elmo-lr2e-3", [240, 160, 130])
    write(tmp_path, "bert_post-lr5e-4", [600, 500, 400])
    write(tmp_path, "bert_pre-lr5e-4", [600, 450, 300])
    write(tmp_path, "bert_pre-lr1e-3", [600, 400, 250])
    write(tmp_path, "elmo_adagrad-lr0.1", [300, 3000, 200], forward=True)  # ELMo's curves are drawn too
    write(tmp_path, "elmo_adagrad-lr0.2", [280, 250, 240], forward=True)
    # The arena's biLM takes its rate from the zero-state runs alone, though a stateful run ends lower.
    write(tmp_path, "elmo_zero-lr2e-3", [290, 260, 250], forward=True)
    write(tmp_path, "elmo_zero-lr4e-3", [285, 255, 245], forward=True)
    draw_report.main(tmp_path / "results", tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    best = [line for line in summary.splitlines() if "**(" in line]
    # Masked ELMo's sweep is whole (3 of 3 rates): chosen; BERT*'s (3 of 8) and ELMo's (4 of 14) are not yet.
    assert [line.split(" | ")[1] for line in best] == [
        "lr 0.001 **(chosen)**",
        "pre-LN, lr 0.001 **(best so far)**",
        "Adam from zero states, lr 0.004 **(best so far)**",
    ]
    # Masked ELMo's 1e-3 is inside its grid; BERT*'s pre-LN 1e-3 and ELMo's zero-state 4e-3 are at an edge of theirs.
    edges = [line.split(" | ")[0] for line in summary.splitlines() if "edge of the grid" in line]
    elmo = "| ELMo biLM (Adam or bilm-tf's Adagrad)"
    assert edges == ["| BERT* (AdamW; post- or pre-LayerNorm)", elmo]
    assert f"{elmo} | Adagrad, lr 0.1 | 200.0 | 200.0 | 150 | 100 |" in summary  # 3000 > 1.5 x 300
    assert (tmp_path / "figures" / "tuning.png").stat().st_size > 10_000


def test_a_runaway_perplexity_reads_as_a_power_of_ten(tmp_path):
    write(tmp_path, "elmo_zero-lr1.6e-2", [290, 3.4e10, 4.342947898504435e17], forward=True)
    write(tmp_path, "elmo_zero-lr8e-3", [280, 250, 240], forward=True)
    draw_report.main(tmp_path / "results", tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert "| Adam from zero states, lr 0.016 | 4.3 x 10^17 | 290.0 | 150 | 100 |" in summary
    assert "| Adam from zero states, lr 0.008 **(best so far)** | 240.0 | 240.0 | 150 | – |" in summary
    # The figure's panel shows the runs that did not run away; the runaway one would squash them into a line.
    bottom, top = draw_baselines.y_range(tuning.load_tuning(tmp_path / "results" / "tuning")["elmo"])
    assert (bottom, top) == (0.9 * 240, 1.25 * 280)


def test_divergence_is_a_rise_above_the_lowest_point_so_far():
    curve = [{"updates": u, "perplexity": p} for u, p in ((1, 100), (2, 80), (3, 119), (4, 121), (5, 60))]
    assert draw_baselines.diverged_at(curve) == 4  # 121 > 1.5 x 80; 119 is not
    assert draw_baselines.diverged_at(curve[:3]) is None


def test_the_baselines_table_says_what_each_arena_encoder_is(tmp_path):
    for name, final in (
        ("masked_elmo-lr5e-4", 150),
        ("masked_elmo-lr1e-3", 110),
        ("masked_elmo-lr2e-3", 130),
    ):
        write(tmp_path, name, [300, final])
    arena = tmp_path / "results" / "arena_encoders"
    for seed, final in ((1, 40.0), (2, 44.0), (3, 42.0)):  # mean 42, standard deviation 2
        (arena / f"masked_elmo-seed{seed}").mkdir(parents=True)
        points = [
            {"updates": 2494, "wordpieces": 5107712, "cpu_seconds": 60.0 * (60 + seed), "perplexity": final}
        ]
        (arena / f"masked_elmo-seed{seed}" / "validation_curve.json").write_text(json.dumps(points))
    counts = {"total": 5461316, "encoder": 1720832, "embedding_dim": 128}
    (arena / "baselines.json").write_text(
        json.dumps(
            {
                "parameters": {"masked_elmo": counts, "bert": {**counts, "total": 5409476}},
                "word_frequency_floor": 640.3,
                "vocabulary": "vocab.txt",
            }
        )
    )
    budget_kept(tmp_path / "results", {"pre-lr2e-3-warmup250-linear": (250.0, 251.0)})  # the best of (e)
    draw_report.main(tmp_path / "results", tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert (
        "| Masked ELMo (Adam), masked perplexity | 5.46M; 1.72M | 128 | lr 0.001 | 62 | 42.0 ± 2.0 (3 seeds) |"
        in summary
    )
    # BERT* runs the choice of its own budget (e), not the tuning campaign's
    assert (
        "| BERT* (AdamW; post- or pre-LayerNorm), masked perplexity | 5.41M; 1.72M | 128 "
        "| its budget (e): 1 of 11 recipes run | – | – |" in summary
    )
    budget_kept(
        tmp_path / "results", {bert_budget_name(*recipe): (300.0, 301.0) for recipe in BERT_BUDGET[1:]}
    )
    draw_report.main(tmp_path / "results", tmp_path)
    assert (
        "| BERT* (AdamW; post- or pre-LayerNorm), masked perplexity | 5.41M; 1.72M | 128 "
        "| pre-LN, lr 0.002, warm-up 250, linear (its budget, e) | – | – |"
        in (tmp_path / "summary.md").read_text()
    )
    assert "floor (each word-piece from its training frequency, no context): 640.3" in summary
