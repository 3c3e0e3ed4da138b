"""
The task heads of `modeling_masked_elmo.py` (docs/hf_finetuning.md) against a pure-torch reference, on a
tiny random model in this process (the venv's transformers 4.x): the scalar mix, the max pooling (padding
excluded), `token_type_ids` ignored, the classifier dropout; and its LSTM implementations against each other
(docs/hf_export.md): the CPU recurrence gives `nn.LSTM`'s values and gradients within 1e-5 on a padded
batch, and "auto" never calls `nn.LSTM` on a CPU. `heads_test.py` fine-tunes the heads under 4.x and 5.x,
and `export_test.py` compares the implementations in an export under both.
"""

import warnings

import pytest
import torch

from maelmo_plugin.hf.configuration_masked_elmo import MaskedElmoConfig
from maelmo_plugin.hf.modeling_masked_elmo import (
    MaskedElmoForMaskedLM,
    MaskedElmoForSequenceClassification,
    MaskedElmoForTokenClassification,
)

# Two rows, the second right-padded: [CLS] w w [SEP] w w [SEP] and [CLS] w [SEP] + padding.
INPUT_IDS = torch.tensor([[2, 7, 8, 3, 9, 10, 3], [2, 11, 3, 0, 0, 0, 0]])
ATTENTION_MASK = (INPUT_IDS != 0).long()
# The special ids of that vocabulary: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4.
SPECIAL_IDS = dict(pad_token_id=0, unk_token_id=1, cls_token_id=2, sep_token_id=3, mask_token_id=4)


def tiny_head(head_class, **config):
    torch.manual_seed(0)
    model = head_class(MaskedElmoConfig(vocab_size=20, hidden_size=8, cell_size=6, **config)).eval()
    with torch.no_grad():  # unequal layer weights and a scale, so that the mix is not the plain average
        model.scalar_mix.weights.copy_(torch.tensor([0.5, -1.0, 2.0]))
        model.scalar_mix.scale.fill_(1.5)
    return model


def reference_mix(model, input_ids, attention_mask):
    """gamma * sum_l softmax(w)_l h_l, from the encoder's L + 1 representations."""
    hidden = model.masked_elmo(
        input_ids, attention_mask=attention_mask, output_hidden_states=True
    ).hidden_states
    weights = torch.softmax(model.scalar_mix.weights, dim=0)
    return model.scalar_mix.scale * sum(weight * layer for weight, layer in zip(weights, hidden))


def test_sequence_classification_max_pools_the_mix_over_the_real_tokens_only():
    model = tiny_head(MaskedElmoForSequenceClassification, num_labels=3)
    with torch.no_grad():
        mixed = reference_mix(model, INPUT_IDS, ATTENTION_MASK)
        pooled = torch.stack(
            [mixed[row, : int(length)].max(dim=0).values for row, length in enumerate(ATTENTION_MASK.sum(1))]
        )
        logits = model(INPUT_IDS, attention_mask=ATTENTION_MASK).logits
        alone = model(INPUT_IDS[1:, :3], attention_mask=ATTENTION_MASK[1:, :3]).logits
    # The mix is zero at padding: were padding pooled, every negative maximum of row 1 would become 0.
    assert (pooled[1] < 0).any()
    torch.testing.assert_close(logits, model.classifier(pooled), rtol=0, atol=1e-6)
    torch.testing.assert_close(logits[1:], alone, rtol=0, atol=1e-6)


def test_token_classification_classifies_the_mix_at_every_position():
    model = tiny_head(MaskedElmoForTokenClassification, num_labels=4)
    with torch.no_grad():
        expected = model.classifier(reference_mix(model, INPUT_IDS, ATTENTION_MASK))
        logits = model(INPUT_IDS, attention_mask=ATTENTION_MASK).logits
    torch.testing.assert_close(logits, expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "head_class", [MaskedElmoForSequenceClassification, MaskedElmoForTokenClassification]
)
def test_token_type_ids_are_ignored_and_tuples_put_the_loss_first(head_class):
    model = tiny_head(head_class, num_labels=2)
    labels = torch.tensor([1, 0]) if head_class is MaskedElmoForSequenceClassification else INPUT_IDS % 2
    token_type_ids = torch.cumsum(INPUT_IDS == 3, dim=1).clamp(max=1)  # BERT's segment ids of a pair
    with torch.no_grad():
        output = model(INPUT_IDS, attention_mask=ATTENTION_MASK, labels=labels)
        loss, logits, hidden = model(
            INPUT_IDS,
            attention_mask=ATTENTION_MASK,
            token_type_ids=token_type_ids,
            labels=labels,
            output_hidden_states=True,
            return_dict=False,
        )
    assert torch.equal(logits, output.logits) and torch.equal(loss, output.loss)
    assert len(hidden) == 3 and output.hidden_states is None  # L + 1 layers, only when asked for


def test_classifier_dropout_defaults_to_the_hidden_dropout_as_in_bert():
    assert tiny_head(MaskedElmoForTokenClassification, hidden_dropout_prob=0.3).dropout.p == 0.3
    head = tiny_head(MaskedElmoForTokenClassification, hidden_dropout_prob=0.3, classifier_dropout=0.0)
    assert head.dropout.p == 0.0


def values_and_gradients(model, input_ids, attention_mask, labels):
    """The loss, the logits, the L + 1 representations and every parameter's gradient."""
    model.zero_grad()
    output = model(input_ids, attention_mask=attention_mask, labels=labels, output_hidden_states=True)
    output.loss.backward()
    return [output.loss, output.logits, *output.hidden_states, *(p.grad for p in model.parameters())]


@pytest.mark.parametrize("head_class", [MaskedElmoForMaskedLM, MaskedElmoForSequenceClassification])
def test_the_cpu_recurrence_gives_torch_lstms_values_and_gradients_on_a_padded_batch(head_class):
    labels = torch.tensor([1, 0]) if head_class is MaskedElmoForSequenceClassification else INPUT_IDS.clone()
    if head_class is MaskedElmoForMaskedLM:
        labels[INPUT_IDS < 5] = -100  # no special token as a target
    results, state = {}, None
    for implementation in ("cpu", "torch"):
        torch.manual_seed(0)
        config = MaskedElmoConfig(
            vocab_size=20, hidden_size=8, cell_size=6, lstm_implementation=implementation, **SPECIAL_IDS
        )
        model = head_class(config).eval()
        if (
            state is not None
        ):  # the same parameters, under the same names: an export's state dict loads as it is
            model.load_state_dict(state)
        state = model.state_dict()
        results[implementation] = values_and_gradients(model, INPUT_IDS, ATTENTION_MASK, labels)
    assert len(results["cpu"]) == len(results["torch"])
    for actual, expected in zip(results["cpu"], results["torch"]):
        torch.testing.assert_close(actual, expected, rtol=0, atol=1e-5)


def test_auto_runs_the_cpu_recurrence_on_a_cpu_without_torchs_warning(monkeypatch):
    lstm_calls = []
    forward = torch.nn.LSTM.forward

    def counted(self, *args, **kwargs):
        lstm_calls.append(self)
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(torch.nn.LSTM, "forward", counted)
    model = MaskedElmoForMaskedLM(MaskedElmoConfig(vocab_size=20, hidden_size=8, cell_size=6, **SPECIAL_IDS))
    assert model.config.lstm_implementation == "auto"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model(INPUT_IDS, attention_mask=ATTENTION_MASK).logits.sum().backward()
    assert lstm_calls == [] and not [warning for warning in caught if "oneDNN" in str(warning.message)]
    model.config.lstm_implementation = "torch"  # switches a built model
    model(INPUT_IDS, attention_mask=ATTENTION_MASK)
    assert len(lstm_calls) == 2  # one per layer


def test_the_lstm_implementation_defaults_to_auto_is_written_and_is_checked():
    config = MaskedElmoConfig.from_dict({"vocab_size": 20, "hidden_size": 8, "cell_size": 6})  # an old export
    assert config.lstm_implementation == "auto"
    assert config.to_diff_dict()["lstm_implementation"] == "auto"  # in config.json, where users look
    with pytest.raises(ValueError, match=r"lstm_implementation must be one of \('auto', 'cpu', 'torch'\)"):
        MaskedElmoConfig(lstm_implementation="cudnn")
