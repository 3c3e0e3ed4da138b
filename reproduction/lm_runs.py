"""
The building blocks of every pre-training run of the campaigns: a config under training_config/lm/ with Jsonnet
fields (its sizes, data, seed, trainer and callbacks), and the overrides that score an archive as it trained.
"""

SEEDS = (1, 2, 3)
PAPER_WORDPIECES_PER_UPDATE = 2560  # Table 5: 20 x 128 and 128 x 20
# WikiText-2 articles start at their " = Title = " line.
ARTICLES = 'document_start_pattern: "^ = [^=].* = $"'


def lm_run(name, base, data, sizes="", fields="", curve_every=100, trainer="", callbacks=""):
    """A pre-training run: `base` under training_config/lm/, plus Jsonnet `sizes+::`, `trainer+:` and other fields;
    `callbacks`: more trainer callbacks (Jsonnet objects, comma-separated) after the validation curve."""
    curve = f'{{ type: "maelmo_validation_curve", every_updates: {curve_every} }}'
    callbacks = f"{curve}, {callbacks}" if callbacks else curve
    return {
        "name": name,
        "config": f"lm/{base}",
        "data": data,
        "fields": f"sizes+:: {{ {ARTICLES}, {sizes} }}, {fields} trainer+: {{ callbacks+: [{callbacks}], {trainer} }},",
    }


def small(
    name,
    data,
    seed,
    sizes="",
    fields="",
    base="pretrain_small.jsonnet",
    curve_every=100,
    trainer="",
    callbacks="",
):
    return lm_run(
        name, base, data, sizes, f"settings+:: {{ seed: {seed} }}, {fields}", curve_every, trainer, callbacks
    )


def stateful_reading(length: int, batch_size: int, bidirectional: bool) -> dict:
    """`allennlp evaluate` overrides that read the validation text as training reads it: `batch_size` contiguous
    rows of `length`-token windows in order (odd rows right to left under BTBPTT), each window starting from the
    states its row reached on the window before."""
    return {
        "model.carry_states_in_evaluation": True,
        "validation_data_loader.stateful": True,
        "validation_data_loader.sequence_length": length,
        "validation_data_loader.batch_size": batch_size,
        "validation_data_loader.bidirectional": bidirectional,
    }


def elmo_recipe(variant: str, lr) -> str:
    """The biLM's `sizes` fields for a sweep variant: "adam" or "adagrad" (bilm-tf's) with ELMo's carried states,
    "zero": Adam with every window from zero states."""
    if variant == "zero":
        return f'optimizer: "adam", lr: {lr}, stateful: false'
    return f'optimizer: "{variant}", lr: {lr}'
