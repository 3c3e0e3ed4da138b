"""`MaskedElmo.from_archive(..., cuda_device=0)`: the same vectors as on the CPU. Marked `gpu`."""

import numpy as np
import pytest
import torch

from maelmo_plugin.api import MaskedElmo
from tests.api_test import SENTENCES

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def test_embed_on_a_gpu_gives_the_cpus_vectors(fill_mask_archive, monkeypatch):
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    on_cpu = MaskedElmo.from_archive(fill_mask_archive).embed(SENTENCES, layer="mix", pool="mean")
    on_gpu_elmo = MaskedElmo.from_archive(fill_mask_archive, cuda_device=0)
    on_gpu = on_gpu_elmo.embed(SENTENCES, layer="mix", pool="mean", precision="auto")  # auto: fp32 on a GPU
    for gpu, cpu in zip(on_gpu, on_cpu):
        np.testing.assert_allclose(gpu, cpu, rtol=1e-4, atol=1e-5)
