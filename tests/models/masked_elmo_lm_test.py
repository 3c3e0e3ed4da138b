import copy

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.testing import ModelTestCase
from allennlp.data import Batch, Vocabulary
from allennlp.models import Model

from maelmo_plugin.models.masked_elmo_lm import MaskedElmoLanguageModel
from tests import FIXTURES_ROOT


class MaskedElmoLanguageModelTest(ModelTestCase):
    def setup_method(self):
        super().setup_method()
        self.set_up_model(FIXTURES_ROOT / "lm" / "experiment.jsonnet", FIXTURES_ROOT / "lm" / "corpus.txt")

    def batch(self):
        return Batch(self.instances).as_tensor_dict()

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
        torch.manual_seed(0)
        optimizer = torch.optim.Adam(self.model.parameters(), lr=0.01)
        batch = self.batch()
        losses = []
        for _ in range(60):
            self.model.train()
            loss = self.model(**batch)["loss"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(self.model.eval()(**batch)["loss"]))
        assert losses[-1] < 0.75 * losses[0]

    def test_logits_only_at_selected_positions(self):
        calls = []
        original = torch.nn.functional.linear

        def spy(input, weight, bias=None):
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
    params = Params({"encoder": {"input_dim": 768, "cells": 4096, "num_layers": 2}, "num_mask_sets": 4})
    with torch.device("meta"):
        model = MaskedElmoLanguageModel.from_params(vocab=vocab, params=params)
    count = sum(p.numel() for p in model.parameters())
    d, cells, projection, v = 768, 4096, 384, 28996
    per_direction = 4 * cells * (d + projection) + 2 * 4 * cells + projection * cells
    layer_norms = 2 * 2 * 2 * projection  # per layer: gain and bias for each direction
    assert count == v * d + v + 2 * 2 * per_direction + layer_norms
    assert count == pytest.approx(104e6, rel=0.01)
