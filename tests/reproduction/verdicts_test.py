"""reproduction/verdicts.py: the report's verdict rule, on made-up paired differences with hand-computed intervals."""

import json

import pytest

from reproduction import verdicts

T_975_2 = 4.302653  # Student's t, 2 degrees of freedom (3 seeds): 97.5% and 80% quantiles, from tables
T_80_2 = 1.060660


def test_the_interval_is_students_t_over_the_seeds():
    # mean -3, standard deviation 1, standard error 1 / sqrt(3)
    result = verdicts.verdict([-3.0, -2.0, -4.0], paper_effect=-2.5)
    half_width = T_975_2 / 3**0.5
    assert (result.mean, result.pairs) == (-3.0, 3)
    assert result.low == pytest.approx(-3 - half_width) and result.high == pytest.approx(-3 + half_width)
    assert result.interval() == "-3.0 [-5.5, -0.5]"


def test_supports_when_the_interval_excludes_zero_on_the_papers_side():
    assert (
        verdicts.verdict([-3.0, -2.0, -4.0], paper_effect=-2.5).word == verdicts.SUPPORTS
    )  # a lower perplexity
    assert (
        verdicts.verdict([5.0, 6.0, 7.0], paper_effect=5.9).word == verdicts.SUPPORTS
    )  # a higher GLUE score


def test_contradicts_when_the_interval_excludes_zero_on_the_other_side():
    assert verdicts.verdict([2.0, 3.0, 4.0], paper_effect=-2.5).word == verdicts.CONTRADICTS
    assert verdicts.verdict([-5.0, -6.0, -7.0], paper_effect=5.9).word == verdicts.CONTRADICTS


def test_contradicts_when_the_interval_excludes_the_papers_effect():
    # [2 - 2.48, 2 + 2.48] holds zero but not -2.5: whatever the effect is, it is not the paper's.
    result = verdicts.verdict([1.0, 2.0, 3.0], paper_effect=-2.5)
    assert result.low < 0 < result.high and result.word == verdicts.CONTRADICTS


def test_cannot_tell_when_the_interval_holds_zero_and_the_papers_effect():
    result = verdicts.verdict([-2.0, 0.0, 1.0], paper_effect=-2.5)
    assert result.low < -2.5 and result.high > 0 and result.word == verdicts.CANNOT_TELL
    # standard deviation sqrt(7/3): the effect detected 80% of the time is (t_.975 + t_.80) standard errors
    error = (7 / 3) ** 0.5 / 3**0.5
    assert result.detectable == pytest.approx((T_975_2 + T_80_2) * error, rel=1e-5)
    assert result.line().startswith("cannot tell at this scale: -0.3 [-4.1, +3.5]")
    assert result.line().endswith(f"could detect: {(T_975_2 + T_80_2) * error:.1f}")


def test_more_seeds_narrow_the_interval_enough_to_decide():
    # About the same mean and spread: 3 seeds cannot tell; 12 (t = 2.2 instead of 4.3, a standard error half as
    # large) put the interval at [-1.2, +0.6], which excludes the paper's -2.5.
    few = verdicts.verdict([-2.0, 0.0, 1.0], paper_effect=-2.5)
    many = verdicts.verdict([-2.0, 0.0, 1.0] * 4, paper_effect=-2.5)
    assert few.word == verdicts.CANNOT_TELL
    assert many.high - many.low < (few.high - few.low) / 3
    assert many.word == verdicts.CONTRADICTS


def test_a_verdict_needs_two_seeds_and_a_side():
    with pytest.raises(ValueError, match="at least 2 paired seeds"):
        verdicts.verdict([-1.0], paper_effect=-2.5)
    with pytest.raises(ValueError, match="cannot be 0"):
        verdicts.verdict([-1.0, -2.0], paper_effect=0.0)


def test_draw_report_writes_each_claims_verdict_from_the_results(tmp_path):
    from reproduction import draw_report

    # BTBPTT lower than TBPTT by 3 to 5 points at every seed, read as trained; stateless, no difference.
    for seed, (btbptt, tbptt) in enumerate([(80.0, 84.0), (90.0, 93.0), (70.0, 75.0)], start=1):
        for arm, stateful in (("btbptt", btbptt), ("tbptt", tbptt)):
            run = tmp_path / "results" / "btbptt" / f"{arm}-seed{seed}"
            run.mkdir(parents=True)
            point = {
                "updates": 10,
                "epoch": 0,
                "wordpieces": 1000,
                "cpu_seconds": 1.0,
                "perplexity": 100.0 + seed,
            }
            (run / "validation_curve.json").write_text(json.dumps([point]))
            (run / "stateful_metrics.json").write_text(json.dumps({"perplexity": stateful}))
    draw_report.main(tmp_path)
    summary = (tmp_path / "summary.md").read_text().splitlines()
    stateless, as_trained = [line for line in summary if line.startswith("| btbptt") and "**" in line]
    # stateless: differences 0, 0, 0: an interval of width 0 at 0, which excludes the paper's effect: contradicts
    assert "+0.0 [+0.0, +0.0] (3 seeds)" in stateless and "**contradicts**" in stateless
    # as trained: -4, -3, -5: mean -4, interval -4 ± 4.30 / sqrt(3) = [-6.5, -1.5]; the paper's 3.0% of 84.0 is -2.6
    assert "-4.0 [-6.5, -1.5] (3 seeds)" in as_trained and "**supports**" in as_trained
    assert "| -2.6 |" in as_trained


def test_the_compute_verdict_reads_the_time_masked_elmo_takes_to_reach_bert_stars_final_perplexity(tmp_path):
    from reproduction import draw_report

    arena = tmp_path / "results" / "arena_encoders"
    # Per seed: BERT* ends at 300 after 600 s (10 minutes); Masked ELMo passes 300 on its way from its first
    # validation at 60 s to 200 at 120 s: at 90 s from 400 (seeds 1, 2), at 60 + 60 * 200 / 300 = 100 s from 500.
    for seed, start in ((1, 400.0), (2, 400.0), (3, 500.0)):
        curves = {"masked_elmo": [(60.0, start), (120.0, 200.0)], "bert": [(300.0, 450.0), (600.0, 300.0)]}
        for encoder, points in curves.items():
            run = arena / f"{encoder}-seed{seed}"
            run.mkdir(parents=True)
            curve = [
                {"updates": 10 * i, "wordpieces": 1000 * i, "cpu_seconds": seconds, "perplexity": perplexity}
                for i, (seconds, perplexity) in enumerate(points, start=1)
            ]
            (run / "validation_curve.json").write_text(json.dumps(curve))
    draw_report.main(tmp_path)
    summary = (tmp_path / "summary.md").read_text().splitlines()
    (line,) = [line for line in summary if line.startswith("| compute") and "to reach" in line]
    differences = [90 / 60 - 10, 90 / 60 - 10, 100 / 60 - 10]
    result = verdicts.verdict(differences, (7.8 / 9.8 - 1) * 10)
    assert f"{result.interval()} (3 seeds)" in line and f"**{result.word}**" in line
    assert result.word == verdicts.SUPPORTS and "| -2.0 |" in line  # the paper's 20% of BERT*'s 10 minutes


def test_the_papers_compute_reading_compares_the_time_of_each_encoders_whole_budget(tmp_path):
    from reproduction import draw_report

    # Per seed, each encoder's training CPU-minutes at its last update: Masked ELMo 30, 32, 34; BERT* 24, 24, 27;
    # the ELMo biLM 150, 140 (two seeds so far). Earlier validations must not count.
    minutes = {"masked_elmo": (30.0, 32.0, 34.0), "bert": (24.0, 24.0, 27.0), "elmo": (150.0, 140.0)}
    for encoder, per_seed in minutes.items():
        for seed, total in enumerate(per_seed, start=1):
            run = tmp_path / "results" / "arena_encoders" / f"{encoder}-seed{seed}"
            run.mkdir(parents=True)
            curve = [
                {"updates": 10, "wordpieces": 1000, "cpu_seconds": 60.0, "perplexity": 500.0},
                {"updates": 20, "wordpieces": 2000, "cpu_seconds": 60.0 * total, "perplexity": 100.0 + seed},
            ]
            # The biLM's curves hold both directions' next/previous-word-piece perplexity
            if encoder == "elmo":
                for point in curve:
                    point.update(
                        forward_perplexity=point["perplexity"], backward_perplexity=point["perplexity"]
                    )
            (run / "validation_curve.json").write_text(json.dumps(curve))
    draw_report.main(tmp_path)
    summary = (tmp_path / "summary.md").read_text().splitlines()
    against_bert, against_elmo = [line for line in summary if "of the whole budget" in line]
    # BERT*: +6, +8, +7; the paper's 20% less than BERT*'s mean 25 minutes is -5.1, which the interval excludes
    expected = verdicts.verdict([6.0, 8.0, 7.0], (7.8 / 9.8 - 1) * 25.0)
    assert "BERT*" in against_bert and f"{expected.interval()} (3 seeds)" in against_bert
    assert (
        expected.word == verdicts.CONTRADICTS
        and "**contradicts**" in against_bert
        and "| -5.1 |" in against_bert
    )
    # ELMo: -120, -108 over the 2 seeds both have; the paper's 22% of ELMo's mean 145 is -31.9
    expected = verdicts.verdict([-120.0, -108.0], (7.8 / 10 - 1) * 145.0)
    assert "ELMo biLM" in against_elmo and f"{expected.interval()} (2 seeds)" in against_elmo
    assert "| -31.9 |" in against_elmo and f"**{expected.word}**" in against_elmo
    # The biLM's next/previous-word-piece perplexity is kept off the masked LMs' compute table
    compute_table = summary[summary.index("### " + draw_report.TITLES["arena_encoders"]) :]
    assert any(line.startswith("| masked_elmo |") for line in compute_table)
    assert not any("elmo" in line.replace("masked_elmo", "") for line in compute_table)


def test_the_arena_sequence_length_verdict_reads_each_model_on_its_own_windows(tmp_path):
    from reproduction import draw_report

    # Per seed, (windows of 20, windows of 128): seq20 is best on its own short windows, seq128 on its long ones.
    scores = {
        "seq20": [(100.0, 120.0), (104.0, 126.0), (98.0, 119.0)],
        "seq128": [(110.0, 90.0), (112.0, 96.0), (109.0, 95.0)],
    }
    for arm, per_seed in scores.items():
        for seed, (on20, on128) in enumerate(per_seed, start=1):
            run = tmp_path / "results" / "arena_sequence_length" / f"{arm}-seed{seed}"
            run.mkdir(parents=True)
            point = {"updates": 10, "wordpieces": 1000, "cpu_seconds": 1.0, "perplexity": 100.0}
            (run / "validation_curve.json").write_text(json.dumps([point]))
            for length, perplexity in ((20, on20), (128, on128)):
                (run / f"windows{length}_metrics.json").write_text(json.dumps({"perplexity": perplexity}))
    draw_report.main(tmp_path)
    summary = (tmp_path / "summary.md").read_text().splitlines()
    own, on128 = [line for line in summary if line.startswith("| arena_sequence_length")]
    # own windows: seq128 on 128 minus seq20 on 20 = -10, -8, -3; the paper's 30% of seq20's mean 100.67 is -30.2
    expected = verdicts.verdict([-10.0, -8.0, -3.0], (14.12 / 20.17 - 1) * (100.0 + 104.0 + 98.0) / 3)
    assert "own windows" in own and f"{expected.interval()} (3 seeds)" in own
    assert f"**{expected.word}**" in own
    assert "| -30.2 |" in own
    # both on windows of 128: -30, -30, -24
    assert verdicts.verdict([-30.0, -30.0, -24.0], -0.3 * 121.67).interval() in on128
    assert "### Table 5, the fair arena" in "\n".join(summary)
