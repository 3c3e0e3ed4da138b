"""
The pieces of jiant's GLUE target-task heads (Wang et al., 2019, jiant 1.x `models.py`, `Pooler`,
`Classifier`, `AttnPairEncoder`), which the Masked ELMo paper keeps for every task (section 4).
"""

from typing import Optional

import torch
from allennlp.modules.matrix_attention import DotProductMatrixAttention
from allennlp.modules.seq2seq_encoders import LstmSeq2SeqEncoder
from allennlp.nn import util


class MaxPooler(torch.nn.Module):
    """An optional linear projection, then the maximum over the (unmasked) tokens: (B, T, D) -> (B, P)."""

    def __init__(self, input_dim: int, projection_dim: Optional[int] = None) -> None:
        super().__init__()
        self.projection = torch.nn.Linear(input_dim, projection_dim) if projection_dim else None
        self.output_dim = projection_dim or input_dim

    def forward(self, sequence: torch.Tensor, mask: torch.BoolTensor) -> torch.Tensor:
        if self.projection is not None:
            sequence = self.projection(sequence)
        return util.masked_max(sequence, mask.unsqueeze(-1), dim=1)  # type: ignore[arg-type]  # why: allennlp annotates masks BoolTensor, torch types every result Tensor


def mlp_classifier(input_dim: int, hidden_dim: int, num_outputs: int, dropout: float) -> torch.nn.Sequential:
    """jiant's `mlp` classifier: Linear -> Tanh -> LayerNorm -> Dropout -> Linear."""
    return torch.nn.Sequential(
        torch.nn.Linear(input_dim, hidden_dim),
        torch.nn.Tanh(),
        torch.nn.LayerNorm(hidden_dim),
        torch.nn.Dropout(dropout),
        torch.nn.Linear(hidden_dim, num_outputs),
    )


class AttentionPairEncoder(torch.nn.Module):
    """
    jiant's bi-attention pair encoder: dot-product attention both ways, each sentence concatenated with
    its attended summary of the other, then one shared BiLSTM modelling layer (B, T, 2 x hidden_dim).
    """

    def __init__(self, input_dim: int, hidden_dim: int, dropout: float) -> None:
        super().__init__()
        self.attention = DotProductMatrixAttention()
        self.modeling = LstmSeq2SeqEncoder(2 * input_dim, hidden_dim, num_layers=1, bidirectional=True)
        self.dropout = torch.nn.Dropout(dropout)
        self.output_dim = self.modeling.get_output_dim()

    def forward(
        self,
        first: torch.Tensor,
        first_mask: torch.BoolTensor,
        second: torch.Tensor,
        second_mask: torch.BoolTensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # Shape: (batch_size, first_length, second_length)
        similarity = self.attention(first, second)
        first_attends = util.weighted_sum(second, util.masked_softmax(similarity, second_mask.unsqueeze(1)))  # type: ignore[arg-type]  # why: allennlp annotates masks BoolTensor, torch types every result Tensor
        second_attends = util.weighted_sum(
            first,
            util.masked_softmax(similarity.transpose(1, 2), first_mask.unsqueeze(1)),  # type: ignore[arg-type]  # why: allennlp annotates masks BoolTensor, torch types every result Tensor
        )
        modeled_first = self.modeling(torch.cat([first, first_attends], -1), first_mask)
        modeled_second = self.modeling(torch.cat([second, second_attends], -1), second_mask)
        return self.dropout(modeled_first), self.dropout(modeled_second)
