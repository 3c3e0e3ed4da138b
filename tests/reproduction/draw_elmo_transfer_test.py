"""reproduction/draw_elmo_transfer.py: the elmo_transfer table, from made-up result files."""

import json

from reproduction.draw_elmo_transfer import transfer_table


def write(results, claim, run, **files):
    (results / claim / run).mkdir(parents=True)
    for name, content in files.items():
        (results / claim / run / f"{name}.json").write_text(json.dumps(content))


def test_each_row_shows_its_scores_and_the_largest_sizes_of_the_weights_it_started_from(tmp_path):
    frozen = {
        "forward_layers.0": {"input_norm": 209.1, "recurrent_spectral_norm": 40.6},
        "backward_layers.0": {"input_norm": 122.8, "recurrent_spectral_norm": 16.5},
    }
    write(
        tmp_path,
        "elmo_transfer",
        "arena-fz",
        dev_metrics={"accuracy": 0.661},
        encoder_weights=frozen,
        metrics={"training_accuracy": 0.672, "validation_accuracy": 0.642},
    )
    # the arena's fine-tune starts from the same archive as arena-fz: it shows arena-fz's weights
    write(
        tmp_path,
        "arena_glue",
        "elmo_stateful-sst2-seed1",
        dev_metrics={"accuracy": 0.7248},
        metrics={"training_accuracy": 0.7453, "validation_accuracy": 0.7099},
    )
    rows = {
        line.split(" | ")[0][2:]: line.split(" | ")[1:]
        for line in transfer_table(tmp_path).splitlines()
        if line.startswith("| ELMo biLM, the arena's")
    }
    # dev at the last epoch, then at the best (dev-chosen) one, then training at the last
    assert rows["ELMo biLM, the arena's stateful, frozen"] == ["64.2", "66.1", "67.2", "209.1", "40.6 |"]
    fine_tuned = "ELMo biLM, the arena's stateful (Adam 8e-3, all of WikiText-2), fine-tuned"
    assert rows[fine_tuned] == ["71.0", "72.5", "74.5", "209.1", "40.6 |"]
    missing = next(line for line in transfer_table(tmp_path).splitlines() if "Adam 2e-3" in line)
    assert missing.endswith("| – | – | – | – | – |")  # not kept yet
