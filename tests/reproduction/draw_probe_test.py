"""reproduction/draw_probe.py: whether the GLUE probe tells one run's weights apart, on made-up scores."""

import json

from maelmo_plugin.arena.verdicts import CANNOT_TELL, SUPPORTS
from reproduction import draw_probe, draw_report
from reproduction.claims import glue_gates
from reproduction.draw_glue import claim_glue_scores


def probe_results(tmp_path, final_ft, early_ft, final_fz, early_fz):
    """A probe campaign's results: each (point, mode)'s score per task and seed, RTE = CoLA = SST-2."""
    results = tmp_path / "results"
    run = results / "probe_encoder" / "masked_elmo-seed1"
    run.mkdir(parents=True)
    (run / "validation_curve.json").write_text(json.dumps([{"updates": 2494, "perplexity": 41.0}]))
    for updates, perplexity in ((100, 300.0), (500, 89.0)):
        (run / f"snapshot_update{updates}_metrics.json").write_text(json.dumps({"perplexity": perplexity}))
    for (point, mode), per_seed in {
        ("final", "ft"): final_ft,
        ("update100", "ft"): early_ft,
        ("final", "fz"): final_fz,
        ("update100", "fz"): early_fz,
    }.items():
        for seed, score in enumerate(per_seed, start=1):
            for task in ("rte", "cola", "sst2"):
                glue = results / "probe" / f"{point}-{mode}-{task}-seed{seed}"
                glue.mkdir(parents=True)
                (glue / "dev_metrics.json").write_text(json.dumps({"glue_score": score / 100}))
    return results


def arena_results(results, random_bert: float) -> None:
    """arena_glue's runs: Masked ELMo 50, BERT* 45, the random encoder 47, BERT*'s untrained architecture
    `random_bert`, each seed's score moved by the same noise, RTE = CoLA = SST-2."""
    for encoder, base in (
        ("masked_elmo", 50.0),
        ("bert", 45.0),
        ("random", 47.0),
        ("random_bert", random_bert),
    ):
        for seed, noise in enumerate((0.0, 1.0, -1.0), start=1):
            for task in ("rte", "cola", "sst2"):
                run = results / "arena_glue" / f"{encoder}-{task}-seed{seed}"
                run.mkdir(parents=True)
                (run / "dev_metrics.json").write_text(json.dumps({"glue_score": (base + noise) / 100}))


def test_the_probe_tells_when_the_final_weights_score_above_the_early_ones_at_every_seed(tmp_path):
    # ft: +0.5, -0.5, +0.2: cannot tell; fz: +5, +6, +7: the frozen probe tells
    results = probe_results(tmp_path, [50.5, 49.5, 50.2], [50.0, 50.0, 50.0], [45.0, 46.0, 47.0], [40.0] * 3)
    verdicts = draw_probe.probe_verdicts(results)
    assert verdicts["ft"].direction == CANNOT_TELL and verdicts["fz"].direction == SUPPORTS
    assert verdicts["fz"].interval() == "+6.0 [+3.5, +8.5]"
    detects = draw_probe.probe_detects(results)
    assert (detects["ft"]["direction"], detects["fz"]["direction"]) == (CANNOT_TELL, SUPPORTS)
    assert f"({CANNOT_TELL}: {draw_probe.BLIND})" in detects["ft"]["text"]
    assert detects["ft"]["text"].startswith("fine-tuned, one Masked ELMo run's weights at 41 and 300")
    assert detects["fz"]["interval"] == "+6.0 [+3.5, +8.5]" and draw_probe.BLIND not in detects["fz"]["text"]
    assert detects["fz"]["detectable"] == round(verdicts["fz"].detectable, 3)


def test_the_probe_decides_only_on_all_its_seeds(tmp_path):
    # 2 of 3 seeds: an interval of t(1 df) = 12.7 standard errors would call the probe blind for want of seeds
    results = probe_results(tmp_path, [50.5, 49.5], [50.0, 50.0], [45.0, 46.0], [40.0] * 2)
    assert draw_probe.probe_verdicts(results) == {} and draw_probe.probe_detects(results) == {}
    table = draw_probe.probe_table(results)
    assert "final − update100, fine-tuned: +0.0 [" in table
    assert "(2 of 3 GLUE seeds; the probe's verdict waits for all 3)" in table


def test_a_glue_row_keeps_the_rules_verdict_and_says_beside_it_what_the_probe_can_detect(tmp_path):
    results = probe_results(tmp_path, [50.5, 49.5, 50.2], [50.0, 50.0, 50.0], [45.0, 46.0, 47.0], [40.0] * 3)
    # the arena: Masked ELMo 5 above BERT* at every seed, each 3 above its untrained architecture
    arena_results(results, random_bert=42.0)
    draw_report.main(tmp_path / "results", tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert "| update100 | 300.0 | 50.0 ± 0.0 (3 runs) | 40.0 ± 0.0 (3 runs) |" in summary
    assert (tmp_path / "figures" / "probe.png").read_bytes()[:4] == b"\x89PNG"
    (row,) = [
        row
        for row in json.loads((tmp_path / "results" / "verdicts.json").read_text())
        if "BERT* (both ft)" in row["comparison"]
    ]
    assert row["gate"]["masked_elmo"]["average"]["result"] == "passes"
    # +5 at every seed: the rule's words from the interval, whatever the probe (which cannot tell, fine-tuned)
    assert row["interval"] == [5.0, 5.0] and row["verdict"] == "supports, larger than the paper's"
    assert row["probe"]["direction"] == CANNOT_TELL and row["probe"]["mode"] == "fine-tuned"
    assert row["probe"]["text"].startswith(
        "fine-tuned, one Masked ELMo run's weights at 41 and 300 masked perplexity"
    )
    assert draw_probe.BLIND in row["probe"]["text"] and "detect" in row["probe"]["text"]
    (line,) = [
        line
        for line in summary.splitlines()
        if line.startswith("| arena_glue | Masked ELMo − BERT* (both ft)")
    ]
    assert f"**supports, larger than the paper's** | {row['probe']['text']} |" in line


def test_where_the_probe_cannot_rank_a_failed_gate_still_gives_no_verdict_and_the_probe_has_its_own_rows(
    tmp_path,
):
    # The probe cannot rank fine-tuned; BERT* 1 below its untrained architecture at every seed (a failed gate)
    results = probe_results(tmp_path, [50.5, 49.5, 50.2], [50.0, 50.0, 50.0], [45.0, 46.0, 47.0], [40.0] * 3)
    arena_results(results, random_bert=46.0)
    draw_report.main(tmp_path / "results", tmp_path)
    rows = json.loads((tmp_path / "results" / "verdicts.json").read_text())
    (bert,) = [row for row in rows if "BERT* (both ft)" in row["comparison"]]
    assert bert["gate"]["bert"]["average"]["result"] == "fails"
    assert bert["direction"] is None and bert["size"] is None
    assert bert["verdict"] == "a gate failed (bert)"
    assert draw_probe.BLIND in bert["probe"]["text"]
    probe = {row["comparison"].split(", ")[1]: row for row in rows if row["claim"] == "probe"}
    assert probe["fine-tuned"]["verdict"] == f"{CANNOT_TELL}, not comparable"
    assert probe["frozen"]["verdict"] == "supports, not comparable"
    assert (probe["frozen"]["mean"], probe["frozen"]["interval"], probe["frozen"]["pairs"]) == (
        6.0,
        [3.516, 8.484],
        3,
    )


def test_masked_elmos_frozen_gate_reads_the_probes_untrained_frozen_runs(tmp_path):
    # The probe's untrained architecture frozen is the arena's random-fz (the same condition on the same seeds):
    # the arena does not run it again, and Masked ELMo frozen is gated against it.
    results = tmp_path / "results"
    for claim, encoder, base in (("probe", "untrained-fz", 40.0), ("arena_glue", "masked_elmo-fz", 45.0)):
        for seed, noise in enumerate((0.0, 1.0, -1.0), start=1):
            for task in ("rte", "cola", "sst2"):
                run = results / claim / f"{encoder}-{task}-seed{seed}"
                run.mkdir(parents=True)
                (run / "dev_metrics.json").write_text(json.dumps({"glue_score": (base + noise) / 100}))
                metrics = {"validation_glue_score": (base + noise - 1) / 100}
                (run / "metrics.json").write_text(json.dumps(metrics))
    draw_report.main(tmp_path / "results", tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert "| random encoder, frozen | 40.0 ± 1.0 (3 runs) |" in summary  # best epoch, RTE's column
    assert "| random encoder, frozen | 39.0 ± 1.0 (3 runs) |" in summary  # and the last epoch's table
    # Masked ELMo frozen against it: +5 at every seed
    gate = glue_gates(claim_glue_scores(results, "arena_glue"), "masked_elmo-fz")["average"]
    assert gate.result == "passes" and gate.verdict.mean == 5.0


def test_the_arena_reads_the_probes_final_weights_frozen_as_masked_elmo_frozen_at_seed_1_only(tmp_path):
    # The probe's final-fz at GLUE seeds 1-3 (pre-training seed 1 each): only seed 1 is the arena's condition.
    results = tmp_path / "results"
    for claim, encoder, seeds in (("probe", "final-fz", (1, 2, 3)), ("arena_glue", "masked_elmo-fz", (2, 3))):
        for seed in seeds:
            for task in ("rte", "cola", "sst2"):
                run = results / claim / f"{encoder}-{task}-seed{seed}"
                run.mkdir(parents=True)
                score = 40.0 + seed if claim == "probe" else 50.0 + seed
                (run / "dev_metrics.json").write_text(json.dumps({"glue_score": score / 100}))
    scores = claim_glue_scores(results, "arena_glue")
    assert scores["masked_elmo-fz", "average"] == {"seed1": 41.0, "seed2": 52.0, "seed3": 53.0}
