"""
The task heads of `modeling_masked_elmo.py` against a pure-torch reference, on a tiny random model in this
process (the venv's transformers 4.x): the mix, the pooling, what is ignored. `heads_test.py` fine-tunes
them under 4.x and 5.x.
"""

import pytest
import torch

from maelmo_plugin.hf.configuration_masked_elmo import MaskedElmoConfig
from maelmo_plugin.hf.modeling_masked_elmo import (
    MaskedElmoForSequenceClassification,
    MaskedElmoForTokenClassification,
)

# Two rows, the second right-padded: [CLS] w w [SEP] w w [SEP] and [CLS] w [SEP] + padding.
INPUT_IDS = torch.tensor([[2, 7, 8, 3, 9, 10, 3], [2, 11, 3, 0, 0, 0, 0]])
ATTENTION_MASK = (INPUT_IDS != 0).long()


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
