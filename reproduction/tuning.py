"""
The tuning campaign: the learning rates each encoder is tried at on one small budget, the kept sweeps, and the
rule that chooses each encoder's arena rate from them (on validation perplexity, never on GLUE).
"""

import json
import re
from pathlib import Path

from maelmo_plugin.arena.rates import lowest_tied_rate

# The learning rates each encoder is tuned over, around its own recipe's rate (Masked ELMo's Adam 1e-3, bilm-tf's
# Adagrad 0.2, ELECTRA-small's AdamW 5e-4), by factors of 2; BERT* with post- and pre-LayerNorm blocks, the ELMo
# biLM with bilm-tf's Adagrad and with Masked ELMo's Adam (after Adagrad stayed at the word-frequency floor on
# this budget; Adam's runs come first). The small configs are parameter-matched
# (tests/lm/parameter_matching_test.py).
TUNING = {
    "masked_elmo": ("pretrain_small.jsonnet", ("5e-4", "1e-3", "2e-3")),
    "bert_post": ("pretrain_bert_small.jsonnet", ("2.5e-4", "5e-4", "1e-3", "2e-3")),
    "bert_pre": ("pretrain_bert_small.jsonnet", ("2.5e-4", "5e-4", "1e-3", "2e-3")),
    # Widened upward while the top rate gives the lowest perplexity: 2e-3 (159.8 against 194.7 at 1e-3), then
    # 4e-3 (135.3), 8e-3 (130.2), then 1.6e-2 (480.9): 8e-3 is inside the grid.
    "elmo_adam": ("pretrain_elmo_small.jsonnet", ("5e-4", "1e-3", "2e-3", "4e-3", "8e-3", "1.6e-2")),
    # 0.4 added after 0.2, the grid's top and bilm-tf's own rate, gave Adagrad's lowest (204.4 against 641.3);
    # 0.4 ends at 522.3 (its forward direction's validation jumps at the last point), so 0.2 stays inside.
    "elmo_adagrad": ("pretrain_elmo_small.jsonnet", ("0.05", "0.1", "0.2", "0.4")),
    # The arena's biLM: Adam with every window from zero states, as the GLUE embedder reads a sentence. Added when
    # the stateful biLM's forward direction proved unconstrained from zero states (an arena seed's zero-state
    # forward perplexity passed 10^14 while it trained at 363); the arena takes its rate from these runs alone
    # (ARENA_VARIANTS, below), and the stateful sweeps above stay as the record. 1.6e-2 was added while
    # 8e-3 ran, as 4e-3 (132.0) had beaten 2e-3 (154.1) and the stateful Adam's best was at 8e-3.
    "elmo_zero": ("pretrain_elmo_small.jsonnet", ("2e-3", "4e-3", "8e-3", "1.6e-2")),
}
# The tuning budget, the same for every encoder: 4 epochs of the 4,000-line subset at the small configs' 32 x 64
# word-pieces per update (about 550 updates, half the GLUE encoders' pre-training), seed 1; BERT*'s warm-up is
# its first 10% (55 updates), then its rate decays linearly to zero over the budget.
TUNING_EPOCHS = 4
BERT_TUNING_WARMUP = 55
NAME = re.compile(r"(masked_elmo|bert|elmo)(?:_(\w+))?-lr(.+)")  # <encoder>[_<variant>]-lr<rate>


def load_tuning(claim_dir: Path) -> dict[str, list[dict]]:
    """{encoder: [{name, variant, lr, curve}]}, from results/tuning/<encoder>[_variant]-lr<rate>/."""
    runs: dict[str, list[dict]] = {}
    for path in sorted(claim_dir.glob("*/validation_curve.json")):
        match = NAME.fullmatch(path.parent.name)
        if match:
            encoder, variant, rate = match.groups()
            runs.setdefault(encoder, []).append(
                {
                    "name": path.parent.name,
                    "variant": variant,
                    "lr": float(rate),
                    "curve": json.loads(path.read_text()),
                }
            )
    for encoder_runs in runs.values():
        encoder_runs.sort(key=lambda run: (run["variant"] or "", run["lr"]))
    return runs


# The variants an encoder's arena rate is chosen among (all of them where it is not named): the ELMo biLM trains
# from zero states in the arena (TUNING's "elmo_zero" says why).
ARENA_VARIANTS = {"elmo": ("zero",)}


def chosen(encoder: str, runs: list):
    """Among the arena's variants, the lowest rate whose final validation perplexity is within TIED (1%) of the
    lowest final perplexity (the arena's rule, maelmo_plugin/arena/rates.py); None before a run has finished."""
    eligible = [run for run in runs if run["variant"] in ARENA_VARIANTS.get(encoder, (run["variant"],))]
    return lowest_tied_rate(
        eligible, rate=lambda run: run["lr"], final=lambda run: run["curve"][-1]["perplexity"]
    )


def encoder_of(name: str):
    """The encoder a tuning run's name tunes ("bert" for bert_post-lr... and bert_pre-lr...), or None."""
    match = NAME.fullmatch(name)
    return match.group(1) if match else None


def sweep(encoder: str) -> list:
    """The names of `encoder`'s tuning runs, as campaigns.tuning_run names them."""
    names = [f"{key}-lr{rate}" for key, (_, rates) in TUNING.items() for rate in rates]
    return [name for name in names if encoder_of(name) == encoder]
