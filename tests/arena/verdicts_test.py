"""maelmo_plugin/arena/verdicts.py: the verdict rule, on made-up paired differences with hand-computed intervals."""

import pytest

from maelmo_plugin.arena import verdicts

T_975_2 = 4.302653  # Student's t, 2 degrees of freedom (3 seeds): 97.5% and 80% quantiles, from tables
T_80_2 = 1.060660


def test_the_interval_is_students_t_over_the_seeds():
    # mean -3, standard deviation 1, standard error 1 / sqrt(3)
    result = verdicts.verdict([-3.0, -2.0, -4.0], side=-1, paper_effect=-2.5)
    half_width = T_975_2 / 3**0.5
    assert (result.mean, result.pairs) == (-3.0, 3)
    assert result.low == pytest.approx(-3 - half_width) and result.high == pytest.approx(-3 + half_width)
    assert result.interval() == "-3.0 [-5.5, -0.5]"


# Made-up differences with 3 seeds, standard deviation 1: the interval is the mean ± 2.48.
WIDTH = T_975_2 / 3**0.5


def around(mean):
    return [mean - 1.0, mean, mean + 1.0]


@pytest.mark.parametrize(
    "side, mean, effect, direction, size",
    [
        # a lower perplexity is the paper's side (-1)
        (-1, -5.0, -4.0, verdicts.SUPPORTS, verdicts.AS_LARGE),  # [-7.5, -2.5] holds -4
        (-1, -3.0, -8.0, verdicts.SUPPORTS, verdicts.SMALLER),  # [-5.5, -0.5] falls short of -8
        (-1, -9.0, -2.0, verdicts.SUPPORTS, verdicts.LARGER),  # [-11.5, -6.5] goes beyond -2
        (-1, 0.0, -2.0, verdicts.CANNOT_TELL, verdicts.AS_LARGE),  # [-2.5, +2.5] holds 0 and -2
        (-1, 2.0, -2.0, verdicts.CANNOT_TELL, verdicts.SMALLER),  # [-0.5, +4.5] holds 0, not -2
        (-1, 5.0, -2.0, verdicts.CONTRADICTS, verdicts.SMALLER),  # [+2.5, +7.5]: the other side
        # a higher GLUE score is the paper's side (+1)
        (1, 3.3, 4.0, verdicts.SUPPORTS, verdicts.AS_LARGE),
        (1, 3.0, 8.0, verdicts.SUPPORTS, verdicts.SMALLER),
        (1, 9.0, 2.0, verdicts.SUPPORTS, verdicts.LARGER),
        (1, 0.0, 1.0, verdicts.CANNOT_TELL, verdicts.AS_LARGE),
        (1, -1.0, 3.0, verdicts.CANNOT_TELL, verdicts.SMALLER),
        (1, -5.0, 2.0, verdicts.CONTRADICTS, verdicts.SMALLER),
    ],
)
def test_the_verdict_is_a_direction_from_zero_and_a_size_from_the_papers_effect(
    side, mean, effect, direction, size
):
    result = verdicts.verdict(around(mean), side=side, paper_effect=effect)
    assert result.low == pytest.approx(mean - WIDTH) and result.high == pytest.approx(mean + WIDTH)
    assert (result.direction, result.size) == (direction, size)
    assert result.words == f"{direction}, {size}"


@pytest.mark.parametrize(
    "mean, direction", [(-5.0, verdicts.SUPPORTS), (0.0, verdicts.CANNOT_TELL), (5.0, verdicts.CONTRADICTS)]
)
def test_a_paper_figure_measured_differently_gives_no_size_but_its_reason(mean, direction):
    result = verdicts.verdict(around(mean), side=-1, paper_effect=None, why_not_comparable="GPU days")
    assert result.words == f"{direction}, {verdicts.NOT_COMPARABLE}"
    assert result.as_dict()["why_not_comparable"] == "GPU days" and result.as_dict()["paper_effect"] is None


def test_cannot_tell_gives_the_smallest_effect_these_seeds_would_detect():
    result = verdicts.verdict([-2.0, 0.0, 1.0], side=-1, paper_effect=-2.5)
    assert result.low < -2.5 and result.high > 0 and result.words == "cannot tell, as large as the paper's"
    # standard deviation sqrt(7/3): the effect detected 80% of the time is (t_.975 + t_.80) standard errors
    error = (7 / 3) ** 0.5 / 3**0.5
    assert result.detectable == pytest.approx((T_975_2 + T_80_2) * error, rel=1e-5)
    assert result.as_dict()["detectable"] == pytest.approx((T_975_2 + T_80_2) * error, abs=1e-3)
    assert verdicts.verdict(around(-5.0), side=-1, paper_effect=-4.0).as_dict()["detectable"] is None


def test_more_seeds_narrow_the_interval_enough_to_size_the_effect():
    # About the same mean and spread: 3 seeds hold the paper's -2.5; 12 put the interval at [-1.2, +0.6].
    few = verdicts.verdict([-2.0, 0.0, 1.0], side=-1, paper_effect=-2.5)
    many = verdicts.verdict([-2.0, 0.0, 1.0] * 4, side=-1, paper_effect=-2.5)
    assert few.size == verdicts.AS_LARGE and many.size == verdicts.SMALLER
    assert few.direction == many.direction == verdicts.CANNOT_TELL
    assert many.high - many.low < (few.high - few.low) / 3


def test_a_verdict_needs_two_seeds_a_side_and_an_effect_on_it_or_a_reason():
    with pytest.raises(ValueError, match="at least 2 paired seeds"):
        verdicts.verdict([-1.0], side=-1, paper_effect=-2.5)
    with pytest.raises(ValueError, match="is \\+1 or -1"):
        verdicts.verdict([-1.0, -2.0], side=0, paper_effect=-2.5)
    with pytest.raises(ValueError, match="not on the paper's side"):
        verdicts.verdict([-1.0, -2.0], side=1, paper_effect=-2.5)
    with pytest.raises(ValueError, match="needs its reason"):
        verdicts.verdict([-1.0, -2.0], side=1, paper_effect=None)


@pytest.mark.parametrize(
    "encoder, untrained, result",
    [
        (
            {"1": 50.0, "2": 51.0, "3": 52.0},
            {"1": 45.0, "2": 45.0, "3": 46.0},
            verdicts.PASSES,
        ),  # +5.7 [+4.2, +7.1]
        ({"1": 50.0, "2": 51.0, "3": 52.0}, {"1": 49.0, "2": 52.0, "3": 50.0}, verdicts.FAILS),  # holds zero
        ({"1": 40.0, "2": 41.0, "3": 42.0}, {"1": 45.0, "2": 45.0, "3": 46.0}, verdicts.FAILS),  # below it
        ({"1": 50.0, "2": 51.0}, {"1": 45.0, "3": 46.0}, verdicts.NOT_RUN),  # one paired seed
        ({"1": 50.0, "2": 51.0}, {}, verdicts.NOT_RUN),
    ],
)
def test_the_gate_passes_an_encoder_that_beats_its_untrained_architecture_by_the_rule(
    encoder, untrained, result
):
    gate = verdicts.gate(encoder, untrained)
    assert gate.result == result
    assert (gate.verdict is None) == (result == verdicts.NOT_RUN)
