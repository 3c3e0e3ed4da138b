"""reproduction/draw_glue.py: the GLUE figure names every encoder it draws, and tells a frozen one apart."""

from matplotlib import pyplot
from matplotlib.container import BarContainer

from reproduction import draw_glue


def test_every_encoder_drawn_has_a_legend_entry_and_a_frozen_one_its_architectures_colour_hatched(
    tmp_path, monkeypatch
):
    # ELMo frozen has runs on CoLA and SST-2 only, not on the first task (RTE): it must still be named.
    scores = {
        ("masked_elmo", "rte"): {"seed1": 52.0},
        ("masked_elmo", "cola"): {"seed1": 7.0},
        ("elmo", "rte"): {"seed1": 55.0},
        ("elmo-fz", "cola"): {"seed1": 0.0},
        ("elmo-fz", "sst2"): {"seed1": 66.6},
    }
    drawn = []
    monkeypatch.setattr(draw_glue.plt, "close", drawn.append)
    draw_glue.draw_glue(scores, {"rte": 52.7}, tmp_path, "arena_glue", "title")
    (figure,) = drawn
    axis = figure.axes[0]
    labels = [text.get_text() for text in axis.get_legend().get_texts()]
    assert labels == ["most frequent dev label", "Masked ELMo", "ELMo", "ELMo, frozen"]
    bars = {
        bar.get_label(): bar.patches[0]
        for bar in axis.containers
        if isinstance(bar, BarContainer) and not bar.get_label().startswith("_")
    }
    assert bars["ELMo, frozen"].get_facecolor() == bars["ELMo"].get_facecolor()
    assert bars["ELMo, frozen"].get_hatch() == "//" and bars["ELMo"].get_hatch() is None
    assert (tmp_path / "arena_glue.png").read_bytes()[:4] == b"\x89PNG"
    pyplot.close(figure)
