"""The language models' tests, mirroring maelmo_plugin/lm/models/."""

import torch
from allennlp.common.testing import ModelTestCase
from allennlp.data import Batch

from tests import FIXTURES_ROOT


class LanguageModelTestCase(ModelTestCase):
    """
    ModelTestCase on the fixture experiment `CONFIG` (tests/fixtures/lm/) over the fixture corpus: the setup, the
    batch and the training loop that every language model's tests share.
    """

    CONFIG = "experiment.jsonnet"  # Masked ELMo's

    def setup_method(self):
        super().setup_method()
        self.set_up_model(FIXTURES_ROOT / "lm" / self.CONFIG, FIXTURES_ROOT / "lm" / "corpus.txt")

    def batch(self):
        """The fixture corpus's windows, as one batch of tensors."""
        return Batch(self.instances).as_tensor_dict()

    def evaluation_losses_while_training(self, steps: int) -> list[float]:
        """
        Trains the model on `batch()` alone with Adam (lr 0.01, torch seed 0) for `steps` steps; returns its
        evaluation loss on that batch after each step, for tests that the loss goes down.
        """
        torch.manual_seed(0)
        optimizer = torch.optim.Adam(self.model.parameters(), lr=0.01)
        batch = self.batch()
        losses = []
        for _ in range(steps):
            self.model.train()
            loss = self.model(**batch)["loss"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                losses.append(float(self.model.eval()(**batch)["loss"]))
        return losses
