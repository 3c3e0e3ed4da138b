import copy

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader, Vocabulary
from allennlp.models import Model

from maelmo_plugin.lm.data_loaders.btbptt import BtbpttDataLoader
from maelmo_plugin.lm.models.masked_elmo_lm import MaskedElmoLanguageModel
from tests import FIXTURES_ROOT
from tests.lm.models import LanguageModelTestCase


class MaskedElmoLanguageModelTest(LanguageModelTestCase):
    def test_model_can_train_save_and_load(self):
        self.ensure_model_can_train_save_and_load(self.param_file)

    def test_forward_pass_runs_correctly(self):
        self.model.eval()
        output = self.model(**self.batch())
        assert set(output) == {"loss", "num_masked"}
        assert output["loss"].shape == ()
        assert output["num_masked"] > 0
        metrics = self.model.get_metrics(reset=True)
        assert set(metrics) == {"perplexity", "accuracy"}
        assert all(type(value) is float for value in metrics.values())
        assert metrics["perplexity"] == pytest.approx(float(output["loss"].detach().exp()), rel=1e-5)

    def test_validation_masks_repeat_exactly_across_eval_passes(self):
        batch = self.batch()
        first = self.model.eval()(**batch)["loss"]
        self.model.train()(**batch)  # draws from the training generator in between
        second = self.model.eval()(**batch)["loss"]
        assert torch.equal(first, second)

    def test_a_masked_token_cannot_be_seen(self):
        """Changing the original token under a [MASK] leaves every representation unchanged."""
        model = self.model.eval()
        seen = {}
        model._embedding.register_forward_hook(lambda module, args, out: seen.__setitem__("input", args[0]))
        model._encoder.register_forward_hook(lambda module, args, out: seen.__setitem__("layers", out[0]))
        batch = self.batch()
        model.eval()(**batch)
        corrupted, layers = seen["input"], seen["layers"]
        masked = corrupted == model._masking.mask_id
        assert masked.sum() > 0
        altered = copy.deepcopy(batch)
        ids = altered["tokens"]["tokens"]["tokens"]
        replacement = model.vocab.get_token_index("river", "wordpieces")
        ids[masked] = torch.where(ids[masked] == replacement, replacement + 1, replacement)
        model.eval()(**altered)  # eval() re-seeds: the same positions are masked
        assert torch.equal(seen["input"], corrupted)
        for before, after in zip(layers, seen["layers"]):
            torch.testing.assert_close(before, after, atol=0, rtol=0)

    def test_loss_goes_down_on_a_tiny_corpus(self):
        # The fixture's 7 paragraphs: the loss first drops to about the unigram level (0.75 of the start),
        # then falls as the model learns the paragraphs; 120 steps are well into that second phase.
        losses = self.evaluation_losses_while_training(120)
        assert losses[-1] < 0.75 * losses[0]

    def test_logits_only_at_selected_positions(self):
        calls = []
        original = torch.nn.functional.linear

        vocab_size = self.vocab.get_vocab_size("wordpieces")

        def spy(input, weight, bias=None):
            if weight.size(0) == vocab_size:  # the tied softmax, not the encoder's own products
                calls.append(input.shape)
            return original(input, weight, bias)

        output = None
        try:
            torch.nn.functional.linear = spy
            output = self.model.eval()(**self.batch())
        finally:
            torch.nn.functional.linear = original
        num_tokens = self.batch()["tokens"]["tokens"]["tokens"].numel()
        assert calls == [torch.Size([int(output["num_masked"]), 16])]
        assert calls[0][0] < num_tokens

    def test_too_many_mask_sets_fail_at_construction(self):
        params = Params.from_file(self.param_file).pop("model")
        params["num_mask_sets"] = 4  # 4 x 30% > 100%
        with pytest.raises(ConfigurationError, match="exceed 100%"):
            Model.from_params(vocab=self.vocab, params=params)


def test_paper_size_has_about_104m_parameters():
    """Section 3.3: d=768, 2 layers of 4096 cells, bert-base-cased's 28,996 word-pieces -> 104M."""
    vocab = Vocabulary(non_padded_namespaces=["wordpieces"])
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab.add_tokens_to_namespace(special + [f"w{i}" for i in range(28996 - 5)], "wordpieces")
    params = Params(
        {
            "encoder": {"type": "maelmo_masked_elmo", "input_dim": 768, "cells": 4096, "num_layers": 2},
            "num_mask_sets": 4,
        }
    )
    with torch.device("meta"):
        model = MaskedElmoLanguageModel.from_params(vocab=vocab, params=params)
    count = sum(p.numel() for p in model.parameters())
    d, cells, projection, v = 768, 4096, 384, 28996
    per_direction = 4 * cells * (d + projection) + 2 * 4 * cells + projection * cells
    layer_norms = 2 * 2 * 2 * projection  # per layer: gain and bias for each direction
    assert count == v * d + v + 2 * 2 * per_direction + layer_norms
    assert count == pytest.approx(104e6, rel=0.01)


class StatefulTrainingTest(LanguageModelTestCase):
    """Mask accumulation and stateful training over the maelmo_btbptt loader."""

    def setup_method(self):
        super().setup_method()
        params = Params.from_file(self.param_file)
        self.reader = DatasetReader.from_params(params["dataset_reader"])
        self.corpus = str(FIXTURES_ROOT / "lm" / "corpus.txt")

    def model_with(self, **overrides):
        params = Params.from_file(self.param_file)["model"].as_dict()
        params.update(overrides)
        torch.manual_seed(3)
        return Model.from_params(vocab=self.vocab, params=Params(params))

    def loader(self, **kwargs):
        return BtbpttDataLoader(
            self.reader, self.corpus, batch_size=2, sequence_length=12, quiet=True, **kwargs
        )

    def encoder_states_over_the_loader(self, model, **loader_kwargs) -> list:
        """
        (the states handed to the encoder, the states it returned) at each forward pass of `model`, left in the
        mode it is in (training or evaluation), over every batch of `loader(**loader_kwargs)`.
        """
        calls = []

        def hook(module, args, kwargs, output):
            calls.append((args[2] if len(args) > 2 else kwargs.get("initial_states"), output[1]))

        model._encoder.register_forward_hook(hook, with_kwargs=True)
        for batch in self.loader(**loader_kwargs):
            model(**batch)
        return calls

    def test_states_handed_to_batch_b_are_those_returned_for_the_same_rows_at_batch_b_minus_1(self):
        calls = self.encoder_states_over_the_loader(self.model_with().train())
        assert len(calls) >= 3
        assert calls[0][0] is None  # first window of every row: zero states
        for (_, returned), (handed, _) in zip(calls, calls[1:]):
            for (h_out, c_out), (h_in, c_in) in zip(returned, handed):
                assert torch.equal(h_out.detach(), h_in) and torch.equal(c_out.detach(), c_in)
                assert not h_in.requires_grad  # detached: no gradient across the batch edge

    def test_each_mask_pass_starts_from_the_same_states_and_the_first_pass_carries_them_on(self):
        model = self.model_with(num_mask_sets=2, mask_accumulation="sequential").train()
        calls = self.encoder_states_over_the_loader(model, mask_accumulation_passes=2)
        # Calls come in pairs (pass 0, pass 1) per batch.
        for batch_index in range(1, len(calls) // 2):
            pass0, pass1 = calls[2 * batch_index], calls[2 * batch_index + 1]
            previous_pass0 = calls[2 * batch_index - 2]
            for (h0, _), (h1, _), (h_prev, _) in zip(pass0[0], pass1[0], previous_pass0[1]):
                assert torch.equal(h0, h1)
                assert torch.equal(h0, h_prev.detach())

    def test_evaluation_starts_every_batch_from_zero_states_by_default(self):
        calls = self.encoder_states_over_the_loader(self.model_with().eval())
        assert all(handed is None for handed, _ in calls)

    def test_batched_and_sequential_accumulation_equal_averaging_k_passes_by_hand(self):
        k = 3
        batch = next(iter(self.loader()))
        batch = {"tokens": batch["tokens"]}  # stateless: every pass from zero states
        token_ids = batch["tokens"]["tokens"]["tokens"]
        reference = self.model_with(num_mask_sets=k).train()
        generator_state = reference._train_generator.get_state()
        selected, corrupted = reference._draw_copies(token_ids, None)
        assert not (selected.sum(0) > 1).any()  # the k selections are disjoint
        assert not selected[:, token_ids < 5].any()  # never a special token

        by_hand = {}
        for j in range(k):
            representations, _ = reference._encoder(reference._embedding(corrupted[j]))
            hidden = representations[-1][selected[j]]
            logits = torch.nn.functional.linear(hidden, reference._embedding.weight, reference._output_bias)
            loss = torch.nn.functional.cross_entropy(logits, token_ids[selected[j]]) / k
            grads = torch.autograd.grad(loss, list(reference.parameters()), allow_unused=True)
            for (name, _), grad in zip(reference.named_parameters(), grads):
                if grad is not None:
                    by_hand[name] = by_hand.get(name, 0) + grad

        def gradients(mode, passes):
            model = self.model_with(num_mask_sets=k, mask_accumulation=mode).train()
            model.load_state_dict(reference.state_dict())
            model._train_generator.set_state(generator_state)
            for mask_pass in passes:
                loss = model(**batch, mask_pass=mask_pass)["loss"] / len(passes)  # as the trainer divides
                loss.backward()
            return {name: p.grad for name, p in model.named_parameters() if p.grad is not None}

        for mode, passes in (("batched", [None]), ("sequential", list(range(k)))):
            computed = gradients(mode, passes)
            assert computed.keys() == by_hand.keys()
            for name, grad in by_hand.items():
                torch.testing.assert_close(computed[name], grad, atol=1e-6, rtol=1e-4, msg=f"{mode}: {name}")

    def test_a_repeating_loader_with_a_batched_model_is_a_configuration_error(self):
        model = self.model_with(num_mask_sets=2).train()
        batch = next(iter(self.loader(mask_accumulation_passes=2)))
        with pytest.raises(ConfigurationError, match="set the model's mask_accumulation: 'sequential'"):
            model(**batch)

    def test_sequential_accumulation_without_repeated_batches_is_a_configuration_error(self):
        model = self.model_with(num_mask_sets=2, mask_accumulation="sequential").train()
        with pytest.raises(ConfigurationError, match="mask_accumulation_passes: 2"):
            model(tokens=next(iter(self.loader()))["tokens"])

    def test_more_passes_than_mask_sets_is_a_configuration_error(self):
        model = self.model_with(num_mask_sets=2, mask_accumulation="sequential").train()
        batches = iter(self.loader(mask_accumulation_passes=3))
        model(**next(batches))
        model(**next(batches))
        with pytest.raises(ConfigurationError, match="Pass 2 of a batch, but the model has num_mask_sets: 2"):
            model(**next(batches))  # a third pass would train an empty copy

    def test_mask_by_position_predicts_the_same_word_pieces_in_windows_of_any_length(self):
        """Table 5's reading: a model scored on windows of 6 and one on windows of 16 predict the same tokens."""
        model = self.model_with(num_mask_sets=2).eval()
        predicted = {}
        for length in (6, 16):
            loader = BtbpttDataLoader(
                self.reader,
                self.corpus,
                batch_size=3,
                sequence_length=length,
                shuffle=False,
                stateful=False,
                quiet=True,
                mask_by_position=True,
            )
            masked, count = set(), 0
            for batch in loader:
                ids = batch["tokens"]["tokens"]["tokens"]
                selected, _ = model._draw_copies(ids, batch["window_keys"], batch["token_positions"])
                masked |= {
                    (set_index, place)
                    for set_index in range(2)
                    for place in batch["token_positions"][selected[set_index]].tolist()
                }
                count += int(model(**batch)["num_masked"])
            assert count == len(masked) > 0
            predicted[length] = masked
        assert predicted[6] == predicted[16]
