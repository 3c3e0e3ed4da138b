import math
from typing import Union

import torch
from allennlp.nn.util import dist_reduce_sum
from allennlp.training.metrics import Metric


class TokenPerplexity(Metric):
    """
    Perplexity per predicted token: exp(total cross-entropy / number of predicted tokens), over every batch
    since the last reset and, under distributed training, every worker.

    AllenNLP's `Perplexity` is exp of the mean of per-batch mean losses: a batch with 3 masked positions
    weighs as much as one with 300, which biases masked-LM perplexity wherever the count varies (short last
    windows, the random masking itself). BERT and HF report the per-token figure; so does this.
    """

    def __init__(self) -> None:
        self._total_loss = 0.0
        self._count = 0

    def __call__(self, loss_sum: Union[torch.Tensor, float], count: Union[torch.Tensor, int]) -> None:  # type: ignore[override]  # why: AllenNLP's Metric takes (predictions, gold_labels, mask); this one's model gives summed losses
        """`loss_sum`: the summed cross-entropy of `count` predicted tokens (this worker's)."""
        # One all-reduce for both (float64 counts exactly up to 2**53 tokens).
        totals = dist_reduce_sum(torch.tensor([float(loss_sum), float(count)], dtype=torch.float64))
        self._total_loss += float(totals[0])
        self._count += int(totals[1])

    def get_metric(self, reset: bool = False) -> float:
        value = math.exp(self._total_loss / self._count) if self._count else 0.0
        if reset:
            self.reset()
        return value

    def reset(self) -> None:
        self._total_loss = 0.0
        self._count = 0
