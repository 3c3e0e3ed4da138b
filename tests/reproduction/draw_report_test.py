"""reproduction/draw_report.py: the report's tables and figures from result files, checked on hand-made curves."""

import json

import pytest

from reproduction import draw_report


def curve(perplexities, seconds_per_point, wordpieces_per_point=1000):
    return [
        {
            "updates": 10 * (i + 1),
            "epoch": 0,
            "wordpieces": wordpieces_per_point * (i + 1),
            "training_seconds": seconds_per_point * (i + 1),
            "cpu_seconds": seconds_per_point * (i + 1),
            "perplexity": p,
        }
        for i, p in enumerate(perplexities)
    ]


def drawn_summary(tmp_path, claim: str, runs: dict) -> str:
    """Writes each run's curve under results/<claim>/, draws the report there and returns its summary.md."""
    for name, points in runs.items():
        (tmp_path / "results" / claim / name).mkdir(parents=True)
        (tmp_path / "results" / claim / name / "validation_curve.json").write_text(json.dumps(points))
    draw_report.main(tmp_path / "results", tmp_path)
    return (tmp_path / "summary.md").read_text()


@pytest.fixture
def report(tmp_path):
    drawn_summary(
        tmp_path,
        "mask_accumulation",
        {
            "k1-seed1": curve([100, 80, 70, 60], 10),  # 40 s in all
            "k1-seed2": curve([100, 82, 72, 62], 10),
            "k4-seed1": curve([90, 60], 30),  # slower per update: 60 s in all
        },
    )
    return tmp_path


def test_arms_group_the_seeds_and_report_mean_and_spread(report):
    summary = (report / "summary.md").read_text()
    assert "| k1 | 61.0 ± 1.4 (2 runs) | 40 |" in summary  # final perplexities 60 and 62
    assert "| k4 | 60.0 (1 run) | 20 |" in summary
    assert "| 100 |" in summary  # 4,000 word-pieces in 40 s


def test_speed_is_per_training_cpu_second_not_per_wall_second(tmp_path):
    points = curve([100, 80], 10)  # 2,000 word-pieces in 20 CPU-seconds
    for point in points:
        point["training_seconds"] *= 3  # the core was shared: the wall clock ran 3 times longer
    summary = drawn_summary(tmp_path, "cell", {"fused-seed1": points})
    assert "| fused | 80.0 (1 run) | 20 | 100 |" in summary
    assert "At equal training time (0.3 CPU-minutes, the shortest run's): fused: 80.0 (1 run)." in summary


def test_two_arms_with_seeds_get_the_difference_of_their_means_and_its_standard_error(tmp_path):
    finals = {
        "a-seed1": [30, 10],
        "a-seed2": [30, 12],
        "b-seed1": [30, 20],
        "b-seed2": [30, 24],
        "c-seed1": [30, 15],
    }
    summary = drawn_summary(tmp_path, "btbptt", {name: curve(values, 5) for name, values in finals.items()})
    # Paired by seed: differences -10 and -12, mean -11, standard deviation sqrt(2), standard error 1.0.
    # Unpaired: means 11 and 22, standard deviations sqrt(2) and sqrt(8): sqrt(2/2 + 8/2) = 2.24.
    assert "- a − b: -11.0 ± 1.0 paired by seed (2 pairs); -11.0 ± 2.2 unpaired" in summary
    assert "a − c" not in summary  # one seed of c: no spread to compare with


def test_runs_scored_as_they_trained_get_a_table_of_each_seeds_reading(tmp_path):
    readings = {"btbptt-seed1": 80.0, "btbptt-seed2": 90.0, "btbptt-seed3": 70.0, "tbptt-seed1": 84.0}
    readings |= {"tbptt-seed2": 93.0, "tbptt-seed3": 75.0}
    for name, perplexity in readings.items():
        run = tmp_path / "results" / "btbptt" / name
        run.mkdir(parents=True)
        (run / "validation_curve.json").write_text(json.dumps(curve([50, 40], 5)))
        (run / "stateful_metrics.json").write_text(json.dumps({"perplexity": perplexity}))
    draw_report.main(tmp_path / "results", tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert "| arm | seed 1 | seed 2 | seed 3 | mean |" in summary
    assert "| btbptt | 80.0 | 90.0 | 70.0 | 80.0 ± 10.0 (3 runs) |" in summary
    assert "| tbptt | 84.0 | 93.0 | 75.0 | 84.0 ± 9.0 (3 runs) |" in summary
    # differences -4, -3, -5: standard deviation 1, standard error 1 / sqrt(3)
    assert "| btbptt − tbptt, paired by seed | -4.0 | -3.0 | -5.0 | -4.0 ± 0.6 (3 pairs) |" in summary


def test_runs_scored_on_several_window_lengths_get_a_table_of_them(tmp_path):
    scores = {
        "long-seed1": {20: 30, 128: 10},
        "long-seed2": {20: 34, 128: 12},
        "short-seed1": {20: 20, 128: 15},
        "short-seed2": {20: 22, 128: 19},
    }
    for name, by_length in scores.items():
        run = tmp_path / "results" / "sequence_length" / name
        run.mkdir(parents=True)
        (run / "validation_curve.json").write_text(json.dumps(curve([50, 40], 5)))
        for length, perplexity in by_length.items():
            (run / f"windows{length}_metrics.json").write_text(json.dumps({"perplexity": perplexity}))
    draw_report.main(tmp_path / "results", tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert "| arm | windows of 20 | windows of 128 |" in summary
    assert "| long | 32.0 ± 2.8 (2 runs) | 11.0 ± 1.4 (2 runs) |" in summary
    # Paired by seed: 20-windows 10 and 12 (mean 11, sd sqrt 2, error 1.0); 128-windows -5 and -7.
    assert "| long − short, paired by seed | 11.0 ± 1.0 | -6.0 ± 1.0 |" in summary


def test_equal_time_interpolates_every_arm_at_the_shortest_runs_time(report):
    summary = (report / "summary.md").read_text()
    # Shortest run: 40 s. k=4 at 40 s: between (30 s, 90) and (60 s, 60): 80.
    expected = (
        "At equal training time (0.7 CPU-minutes, the shortest run's): "
        "k1: 61.0 ± 1.4 (2 runs); k4: 80.0 (1 run)."
    )
    assert expected in summary


def test_equal_time_is_also_read_at_each_later_arms_end_among_the_arms_that_ran_that_long(tmp_path):
    summary = drawn_summary(
        tmp_path,
        "mask_accumulation",
        {
            "k1-seed1": curve([100, 80], 20),  # ends at 40 s
            "k4-seed1": curve([90, 60, 50, 40], 30),  # ends at 120 s
            "k1_long-seed1": curve(
                [100, 80, 70, 65, 60, 55], 25
            ),  # at 40 s: 88; at 120 s: 65 + (60 - 65) * 20/25
        },
    )
    assert "the shortest run's): k1: 80.0 (1 run); k1_long: 88.0 (1 run); k4: 80.0 (1 run)." in summary
    assert (
        "At 2.0 CPU-minutes (k4's end), the arms that ran that long: k1_long: 61.0 (1 run); k4: 40.0"
        in summary
    )


def test_the_other_arms_are_read_at_the_updates_they_take_to_reach_the_reference_arms_final(tmp_path):
    summary = drawn_summary(
        tmp_path,
        "mask_accumulation",
        {
            "k4-seed1": curve([90, 60], 30),  # finals 60 and 62 (mean 61) after 20 updates and 60 s
            "k4-seed2": curve([90, 62], 30),
            "k1-seed1": curve([100, 80], 10),  # never comes down to 61
            "k1_long-seed1": curve(
                [100, 80, 70, 65, 59, 55], 10
            ),  # 61 is 4/6 of the way from 65 (40) to 59 (50)
        },
    )
    assert (
        "To reach k4's final validation masked perplexity (61.0, after 20 updates and 1.0 CPU-minutes): "
        "k1 does not (0 of 1 runs); k1_long 47 updates (2.3 times as many) and 0.8 CPU-minutes."
    ) in summary


def test_a_figure_is_drawn_per_claim(report):
    figure = report / "figures" / "mask_accumulation.png"
    assert figure.exists() and figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_glue_table_gives_each_encoder_and_task_its_seeds(tmp_path):
    for name, score in [
        ("masked_elmo-rte-seed1", 0.55),
        ("masked_elmo-rte-seed2", 0.57),
        ("bert-cola-seed1", 0.1),
    ]:
        (tmp_path / "results" / "glue" / name).mkdir(parents=True)
        (tmp_path / "results" / "glue" / name / "dev_metrics.json").write_text(
            json.dumps({"glue_score": score})
        )
    (tmp_path / "results" / "glue" / "majority.json").write_text(json.dumps({"rte": "52.7", "cola": "0.0"}))
    draw_report.main(tmp_path / "results", tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert "| Masked ELMo | 56.0 ± 1.4 (2 runs) | – | – | – | – |" in summary
    assert "| BERT* | – | 10.0 (1 run) | – | – | – |" in summary
    assert "| most frequent dev label (no model) | 52.7 | 0.0 | – | – | – |" in summary
    assert (tmp_path / "figures" / "glue.png").read_bytes()[:4] == b"\x89PNG"
    # A superseded encoder (the stateful biLM) gets a row only where it has scores: here none; an arena has one.
    assert "superseded" not in summary
    (tmp_path / "results" / "arena_glue" / "elmo_stateful-rte-seed1").mkdir(parents=True)
    (tmp_path / "results" / "arena_glue" / "elmo_stateful-rte-seed1" / "dev_metrics.json").write_text(
        json.dumps({"glue_score": 0.57})
    )
    draw_report.main(tmp_path / "results", tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    # no metrics.json, so no last-epoch score: read at its best epoch in both tables, and named
    assert summary.count("| ELMo from carried states (superseded) | 57.0 (1 run) | – | – | – | – |") == 2
    assert "for want of a last-epoch score: elmo_stateful-rte-seed1." in summary


def test_the_glue_tables_read_each_runs_last_epoch_which_no_dev_set_chose_and_give_the_best_beside_it(
    tmp_path,
):
    # The best epoch (archived, chosen on dev) scored 0.60 and 0.62; the last epoch 0.50 and 0.54.
    for seed, best, last in ((1, 0.60, 0.50), (2, 0.62, 0.54)):
        run = tmp_path / "results" / "arena_glue" / f"masked_elmo-rte-seed{seed}"
        run.mkdir(parents=True)
        (run / "dev_metrics.json").write_text(json.dumps({"glue_score": best}))
        (run / "metrics.json").write_text(
            json.dumps({"best_validation_glue_score": best, "validation_glue_score": last})
        )
    draw_report.main(tmp_path / "results", tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    last_table, best_table = summary.split("The same runs at the best (dev-chosen) epoch")
    assert "| Masked ELMo | 52.0 ± 2.8 (2 runs) |" in last_table
    assert "| Masked ELMo | 61.0 ± 1.4 (2 runs) |" in best_table
    assert "for want of a last-epoch score" not in summary


def test_the_glue_tables_average_the_three_tasks_and_pair_masked_elmo_with_each_encoder_by_seed(tmp_path):
    scores = {  # dev scores x 100 by seed; ELMo lacks SST-2 seed 3, BERT* has one seed
        "masked_elmo": {"rte": [55, 57, 60], "cola": [10, 8, 9], "sst2": [80, 81, 82], "wnli": [44]},
        "elmo": {"rte": [50, 54, 53], "cola": [0, 2, 1], "sst2": [78, 77]},
        "bert": {"rte": [52]},
    }
    for encoder, tasks in scores.items():
        for task, values in tasks.items():
            for seed, value in enumerate(values, start=1):
                run = tmp_path / "results" / "glue" / f"{encoder}-{task}-seed{seed}"
                run.mkdir(parents=True)
                (run / "dev_metrics.json").write_text(json.dumps({"glue_score": value / 100}))
    draw_report.main(tmp_path / "results", tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    # The average of RTE, CoLA and SST-2 for each seed that has all three: 48.33, 48.67, 50.33 (Masked ELMo).
    assert (
        "| Masked ELMo | 57.3 ± 2.5 (3 runs) | 9.0 ± 1.0 (3 runs) | 81.0 ± 1.0 (3 runs) | 44.0 (1 run) "
        "| 49.1 ± 1.1 (3 runs) |" in summary
    )
    assert (
        "| ELMo | 52.3 ± 2.1 (3 runs) | 1.0 ± 1.0 (3 runs) | 77.5 ± 0.7 (2 runs) | – | 43.5 ± 1.2 (2 runs) |"
        in summary
    )
    # Masked ELMo − ELMo by seed: RTE 5, 3, 7 (mean 5.0, sd 2.0, se 2/sqrt(3) = 1.15); CoLA 10, 6, 8;
    # SST-2 2, 4; the average (seeds 1-2): 48.33 - 42.67 = 5.67 and 48.67 - 44.33 = 4.33.
    assert (
        "| ELMo | 5.0 ± 1.2 (3 pairs) | 8.0 ± 1.2 (3 pairs) | 3.0 ± 1.0 (2 pairs) | 5.0 ± 0.7 (2 pairs) |"
        in summary
    )
    assert "| BERT* | – | – | – | – |" in summary  # one seed: no pairs to take a spread from


def test_compute_gives_the_time_each_model_needs_to_reach_a_common_perplexity(tmp_path):
    summary = drawn_summary(
        tmp_path,
        "compute",
        {
            "masked_elmo": curve([100, 50, 30], 60),  # reaches 40 at 150 s (halfway from 50 to 30)
            "bert": curve([120, 80, 40], 60),  # its best, 40, is the common target: 180 s
            "elmo": [
                {**point, "forward_perplexity": 1.0} for point in curve([200, 150], 60)
            ],  # not masked: left out
        },
    )
    assert "perplexity of 40.0: bert 3.0, masked_elmo 2.5." in summary
    assert "| elmo |" not in summary


def test_a_curve_already_below_the_target_at_its_first_point_gives_an_upper_bound(tmp_path):
    # bert's best, 40, is the target
    summary = drawn_summary(
        tmp_path, "compute", {"masked_elmo": curve([30, 20], 60), "bert": curve([120, 80, 40], 60)}
    )
    assert "perplexity of 40.0: bert 3.0, masked_elmo ≤ 1.0 (its first validation)." in summary
    assert "(2.0 CPU-minutes, the shortest run's): bert: 80.0 (1 run); masked_elmo: 20.0 (1 run)." in summary
