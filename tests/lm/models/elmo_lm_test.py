import pytest
import torch
import torch.nn.functional as F
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model

from maelmo_plugin.lm.models.elmo_lm import ElmoLanguageModel
from maelmo_plugin.lm.modules.elmo_bilm_encoder import ElmoBiLmEncoder
from tests.lm.models import LanguageModelTestCase
from tests.lm.modules.masked_elmo_encoder_test import copy_lstm_into_elmo_cell


def tokens(ids: torch.Tensor):
    return {"tokens": {"tokens": ids}}


def windows(num_rows: int, length: int, seed: int = 0) -> torch.Tensor:
    """Random word-piece ids of the fixture vocabulary, avoiding the special entries (0 is [PAD])."""
    return torch.randint(5, 150, (num_rows, length), generator=torch.Generator().manual_seed(seed))


class _ElmoLanguageModelTestCase(LanguageModelTestCase):
    CONFIG = "elmo_experiment.jsonnet"

    def build(self, **encoder_overrides) -> ElmoLanguageModel:
        params = Params.from_file(self.param_file).pop("model")
        params["encoder"].update(encoder_overrides)
        return Model.from_params(vocab=self.vocab, params=params)


class ElmoLanguageModelTest(_ElmoLanguageModelTestCase):
    """The fused cell (the fixture's default), and everything that does not depend on the cell."""

    def test_model_can_train_save_and_load(self):
        self.ensure_model_can_train_save_and_load(self.param_file)

    def test_forward_pass_runs_correctly(self):
        self.model.eval()
        output = self.model(**self.batch())
        assert set(output) == {"loss", "forward_loss", "backward_loss"}
        assert all(value.shape == () for value in output.values())
        torch.testing.assert_close(output["loss"], (output["forward_loss"] + output["backward_loss"]) / 2)
        metrics = self.model.get_metrics(reset=True)
        assert set(metrics) == {"forward_perplexity", "backward_perplexity", "perplexity"}
        assert all(type(value) is float for value in metrics.values())
        for key, metric in (("loss", "perplexity"), ("forward_loss", "forward_perplexity")):
            assert metrics[metric] == pytest.approx(float(output[key].detach().exp()), rel=1e-5)

    def test_losses_are_next_and_previous_token_cross_entropies_at_real_positions(self):
        """The loss, recomputed position by position on each row alone (no padding at all)."""
        model = self.model.eval()
        batch = self.batch()
        ids = batch["tokens"]["tokens"]["tokens"]
        mask = ids != 0
        assert not mask.all()  # the fixture's last window is shorter: padding is exercised
        forward_losses, backward_losses = [], []
        for row in range(len(ids)):
            n = int(mask[row].sum())
            top = model.representations(ids[row : row + 1, :n], mask[row : row + 1, :n])[-1][0]
            forward, backward = top.chunk(2, dim=-1)
            for t in range(n - 1):
                logits = F.linear(forward[t], model._embedding.weight, model._output_bias)
                forward_losses.append(F.cross_entropy(logits, ids[row, t + 1]))
            for t in range(1, n):
                logits = F.linear(backward[t], model._embedding.weight, model._output_bias)
                backward_losses.append(F.cross_entropy(logits, ids[row, t - 1]))
        output = model(**batch)
        torch.testing.assert_close(output["forward_loss"], torch.stack(forward_losses).mean())
        torch.testing.assert_close(output["backward_loss"], torch.stack(backward_losses).mean())

    def test_loss_goes_down_on_a_tiny_corpus(self):
        losses = self.evaluation_losses_while_training(40)
        assert losses[-1] < 0.75 * losses[0]

    def test_forward_direction_cannot_see_the_future_nor_backward_the_past(self):
        model = self.model.eval()
        ids = windows(2, 9)
        mask = torch.ones_like(ids, dtype=torch.bool)
        mask[1, 7:] = False
        changed = ids.clone()
        changed[:, 4] = torch.where(ids[:, 4] == 42, 43, 42)
        before = model.representations(ids, mask)
        after = model.representations(changed, mask)
        for layer_before, layer_after in zip(before, after):
            forward_before, backward_before = layer_before.chunk(2, dim=-1)
            forward_after, backward_after = layer_after.chunk(2, dim=-1)
            # Forward: positions 0..3 read tokens 0..t only; backward: positions 5.. read tokens t.. only.
            torch.testing.assert_close(forward_before[:, :4], forward_after[:, :4], atol=0, rtol=0)
            torch.testing.assert_close(backward_before[:, 5:], backward_after[:, 5:], atol=0, rtol=0)
        for layer_before, layer_after in zip(before[1:], after[1:]):
            # ... while the LSTM layers do see the change on their own side.
            forward_before, backward_before = layer_before.chunk(2, dim=-1)
            forward_after, backward_after = layer_after.chunk(2, dim=-1)
            assert not torch.allclose(forward_before[:, 4:7], forward_after[:, 4:7])
            assert not torch.allclose(backward_before[:, :5], backward_after[:, :5])

    def test_representations_duplicate_the_token_layer(self):
        ids = windows(2, 5)
        mask = torch.ones_like(ids, dtype=torch.bool)
        representations = self.model.eval().representations(ids, mask)
        assert [r.shape for r in representations] == [(2, 5, 16)] * 3
        embedding = self.model._embedding(ids)
        torch.testing.assert_close(representations[0], torch.cat([embedding, embedding], -1))

    def test_carries_only_the_forward_states_across_windows(self):
        model = self.model.train()  # dropout is 0 in the fixture: training mode is deterministic
        seen = []
        model._encoder.register_forward_hook(lambda module, args, out: seen.append(out[0]))
        ids = windows(3, 10)
        first, second = ids[:, :6], ids[:, 6:]
        model(tokens(first), reset_states=torch.ones(3, dtype=torch.bool))
        model(tokens(second), reset_states=torch.tensor([False, False, True]))
        carried = seen[-1]
        model(tokens(ids))
        whole = seen[-1]
        model(tokens(second))
        alone = seen[-1]
        for layer_carried, layer_whole, layer_alone in zip(carried[1:], whole[1:], alone[1:]):
            forward_carried, backward_carried = layer_carried.chunk(2, dim=-1)
            # Rows 0 and 1 continue the forward direction from the first window ...
            torch.testing.assert_close(forward_carried[:2], layer_whole[:2, 6:, :8], atol=1e-5, rtol=1e-5)
            # ... row 2 was reset ...
            torch.testing.assert_close(forward_carried[2], layer_alone[2, :, :8], atol=1e-5, rtol=1e-5)
            # ... and the backward direction always starts from zeros.
            torch.testing.assert_close(backward_carried, layer_alone[..., 8:], atol=1e-5, rtol=1e-5)
        # Evaluation starts from zeros unless carry_states_in_evaluation is set.
        model.eval()
        model(tokens(first), reset_states=torch.ones(3, dtype=torch.bool))
        model(tokens(second), reset_states=torch.zeros(3, dtype=torch.bool))
        torch.testing.assert_close(seen[-1][-1], alone[-1], atol=1e-5, rtol=1e-5)

    def test_without_carrying_in_training_every_window_starts_from_zero_states(self):
        params = Params.from_file(self.param_file).pop("model")
        params["carry_states_in_training"] = False
        model = Model.from_params(vocab=self.vocab, params=params).train()  # dropout 0: deterministic
        seen = []
        model._encoder.register_forward_hook(lambda module, args, out: seen.append(out[0]))
        ids = windows(3, 10)
        first, second = ids[:, :6], ids[:, 6:]
        model(tokens(first), reset_states=torch.ones(3, dtype=torch.bool))
        continued = model(tokens(second), reset_states=torch.zeros(3, dtype=torch.bool))  # a stateful batch
        carried = seen[-1]
        alone = model(tokens(second))
        for layer_carried, layer_alone in zip(carried, seen[-1]):
            torch.testing.assert_close(layer_carried, layer_alone)  # both directions from zero states
        torch.testing.assert_close(continued["loss"], alone["loss"])
        assert model.resume_state()["train_states"] is None  # no states kept for a next batch

    def test_fused_and_elmo_cells_agree_with_huge_clips_and_the_same_weights(self):
        torch.manual_seed(0)
        fused = self.build(cell="fused").eval()
        elmo = self.build(cell="elmo", cell_clip=1e9, projection_clip=1e9).eval()
        for parameter in fused._encoder.parameters():
            parameter.data.normal_(std=0.5)  # states well beyond ELMo's clip values of 3
        elmo._embedding.load_state_dict(fused._embedding.state_dict())
        elmo._output_bias.data.copy_(fused._output_bias)
        for stack in ("forward_layers", "backward_layers"):
            for lstm, cell in zip(getattr(fused._encoder, stack), getattr(elmo._encoder, stack)):
                copy_lstm_into_elmo_cell(lstm, "_l0", cell)
        ids = windows(4, 9)
        ids[1, 4:] = 0
        ids[3, 2:] = 0
        mask = ids != 0
        with torch.no_grad():
            # The two cells also agree on the states they return and accept.
            fused_layers, fused_states = fused._encoder(fused._embedding(ids), mask)
            elmo_layers, elmo_states = elmo._encoder(elmo._embedding(ids), mask)
            for expected, actual in zip(fused_states + fused_layers, elmo_states + elmo_layers):
                torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5)
            assert max(float(c.abs().max()) for _, c in fused_states) > 3.0  # clipping would have acted
            fused_layers, _ = fused._encoder(fused._embedding(ids), mask, fused_states)
            elmo_layers, _ = elmo._encoder(elmo._embedding(ids), mask, elmo_states)
            for expected, actual in zip(fused_layers, elmo_layers):
                torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5)
            fused_output, elmo_output = fused(tokens(ids)), elmo(tokens(ids))
            for key in fused_output:
                torch.testing.assert_close(elmo_output[key], fused_output[key], atol=1e-5, rtol=1e-5)

    def test_mask_pass_is_a_configuration_error(self):
        with pytest.raises(ConfigurationError, match="masks nothing"):
            self.model(**self.batch(), mask_pass=0)

    def test_token_positions_are_a_configuration_error(self):
        ids = self.batch()["tokens"]["tokens"]["tokens"]
        with pytest.raises(ConfigurationError, match="remove the maelmo_btbptt loader's mask_by_position"):
            self.model(**self.batch(), token_positions=torch.zeros_like(ids))

    @pytest.mark.parametrize(
        "kwargs, message",
        [
            ({"cell": "cudnn"}, "cell must be one of"),
            ({"cells": 8}, "must exceed the projection size"),
            ({"num_layers": 0}, "at least 1"),
        ],
    )
    def test_impossible_encoder_options_are_configuration_errors(self, kwargs, message):
        with pytest.raises(ConfigurationError, match=message):
            ElmoBiLmEncoder(**{"input_dim": 8, "cells": 24, **kwargs})


class ElmoLanguageModelElmoCellTest(_ElmoLanguageModelTestCase):
    """ELMo's clipping cell (`LstmCellWithProjection`) in the encoder, in the whole AllenNLP training loop."""

    def test_model_can_train_save_and_load(self):
        self.ensure_model_can_train_save_and_load(self.param_file, overrides='{"model.encoder.cell": "elmo"}')

    def test_forward_direction_cannot_see_the_future_nor_backward_the_past(self):
        self.model = self.build(cell="elmo")
        ElmoLanguageModelTest.test_forward_direction_cannot_see_the_future_nor_backward_the_past(self)

    def test_carries_only_the_forward_states_across_windows(self):
        self.model = self.build(cell="elmo")
        ElmoLanguageModelTest.test_carries_only_the_forward_states_across_windows(self)


@pytest.mark.parametrize("cell, biases", [("fused", 2), ("elmo", 1)])
def test_paper_size_parameter_count(cell, biases):
    """ELMo's biLM (2 layers, 4096 cells, 512 projection) on bert-base-cased's 28,996 word-pieces."""
    vocab = Vocabulary(non_padded_namespaces=["wordpieces"])
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab.add_tokens_to_namespace(special + [f"w{i}" for i in range(28996 - 5)], "wordpieces")
    params = Params(
        {
            "encoder": {
                "type": "maelmo_elmo_bilm",
                "input_dim": 512,
                "cells": 4096,
                "num_layers": 2,
                "cell": cell,
            }
        }
    )
    with torch.device("meta"):
        model = ElmoLanguageModel.from_params(vocab=vocab, params=params)
    count = sum(p.numel() for p in model.parameters())
    projection, cells, layers, v = 512, 4096, 2, 28996
    # input and recurrent kernels of the 4 gates, their bias(es) (torch keeps two), the state projection
    per_direction = 4 * cells * (projection + projection) + biases * 4 * cells + cells * projection
    # the tied embedding/softmax, the softmax bias, 2 directions x 2 layers
    assert count == v * projection + v + 2 * layers * per_direction
    assert count == pytest.approx(90.5e6, rel=0.01)
