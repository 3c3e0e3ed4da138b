"""reproduction/compute.py: section 3.3 read in updates, per seed, as a bound where the first validation is already below."""

from maelmo_plugin.arena.verdicts import CANNOT_TELL, CONTRADICTS, NOT_COMPARABLE, SUPPORTS
from reproduction import compute


def run(name, perplexities, every=250):
    return {
        "name": name,
        "validation_curve": [
            {"updates": every * (i + 1), "cpu_seconds": 60.0 * (i + 1), "perplexity": p}
            for i, p in enumerate(perplexities)
        ],
    }


def test_reach_interpolates_between_the_two_points_around_the_target():
    curve = run("masked_elmo-seed1", [100.0, 60.0, 40.0])["validation_curve"]
    assert compute.reach(curve, 50.0, "updates") == 625.0  # halfway from 60 at 500 to 40 at 750
    assert compute.reach(curve, 50.0) == 150.0  # CPU seconds by default
    assert compute.reach(curve, 30.0) is None


def test_each_seed_reads_the_update_masked_elmo_reaches_berts_final_and_whether_it_is_a_bound():
    arms = {
        "masked_elmo": [run("masked_elmo-seed1", [70.0, 50.0]), run("masked_elmo-seed2", [90.0, 70.0, 55.0])],
        "bert": [run("bert-seed1", [200.0, 100.0, 80.0]), run("bert-seed2", [150.0, 80.0, 60.0])],
    }
    reached = compute.compute_updates(arms)
    assert reached["1"] == {"updates": 250, "bound": True, "of": 750, "target": 80.0}
    assert reached["2"]["bound"] is False and abs(reached["2"]["updates"] - (500 + 250 * 10 / 15)) < 1e-9
    row = compute.compute_row(arms)
    assert row["direction"] == SUPPORTS and row["size"] == NOT_COMPARABLE and row["pairs"] == 2
    assert "seed 1: ≤ 250 of 750 (BERT*'s final 80.0)" in row["readings"]


def test_a_seed_that_never_reaches_it_makes_the_direction_cannot_tell_and_all_of_them_contradicts():
    bert = [run("bert-seed1", [60.0, 40.0]), run("bert-seed2", [60.0, 40.0])]
    never, ahead = run("masked_elmo-seed1", [90.0, 50.0]), run("masked_elmo-seed2", [50.0, 30.0])
    assert compute.compute_row({"masked_elmo": [never, ahead], "bert": bert})["direction"] == CANNOT_TELL
    never2 = run("masked_elmo-seed2", [90.0, 45.0])
    assert compute.compute_row({"masked_elmo": [never, never2], "bert": bert})["direction"] == CONTRADICTS
    assert compute.compute_row({"masked_elmo": [never], "bert": []}) is None


def test_the_claim_is_read_against_the_arenas_bert_star_and_its_record_each_in_its_own_row():
    from reproduction.claims import verdict_rows

    masked_elmo = [run("masked_elmo-seed1", [70.0, 50.0]), run("masked_elmo-seed2", [90.0, 40.0])]
    record = [run("bert_tuning_recipe-seed1", [200.0, 80.0]), run("bert_tuning_recipe-seed2", [150.0, 60.0])]
    arena = {"masked_elmo": masked_elmo, "bert_tuning_recipe": record}
    (only,) = [row for row in verdict_rows({"arena_encoders": arena}, {}) if row["claim"] == "compute"]
    assert only["comparison"].endswith("(the record: BERT* at the tuning campaign's recipe)")
    assert "seed 1: ≤ 250 of 500 (BERT*'s final 80.0)" in only["readings"]
    arena["bert"] = [run("bert-seed1", [200.0, 45.0]), run("bert-seed2", [150.0, 45.0])]
    rows = [row for row in verdict_rows({"arena_encoders": arena}, {}) if row["claim"] == "compute"]
    assert [row["comparison"].endswith("(arena)") for row in rows] == [True, False]
    assert "seed 1: never of 500 (BERT*'s final 45.0)" in rows[0]["readings"]


def test_one_seed_gives_its_reading_but_no_verdict_as_every_other_comparison():
    row = compute.compute_row(
        {"masked_elmo": [run("masked_elmo-seed1", [70.0, 50.0])], "bert": [run("bert-seed1", [200.0, 80.0])]}
    )
    assert row["verdict"] == "fewer than 2 paired seeds" and row["direction"] is None
    assert "seed 1: ≤ 250 of 500 (BERT*'s final 80.0)" in row["readings"]
