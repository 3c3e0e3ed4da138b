"""
Data-parallel training that reduces gradients once per update under sequential mask accumulation.

With `mask_accumulation: "sequential"` one update takes k forward/backward passes of the same batch (one per
mask set; the trainer's `num_gradient_accumulation_steps` is k). AllenNLP's trainer calls the model k times
and never enters `DistributedDataParallel.no_sync()`, so plain DDP all-reduces every gradient k times per
update, where once is enough: gradients accumulate locally, and the last pass's all-reduce averages their
sum. The "maelmo_ddp" accelerator wraps the model in a DDP that reads each pass's `mask_pass` and
synchronises only the last one. The result is the same update (up to summation order); the gradient traffic
is divided by k.
"""

from typing import Any

import torch
from allennlp.models import Model
from allennlp.nn.parallel import DdpAccelerator, DdpWrappedModel, TorchDdpAccelerator


class MaskAccumulatingDdp(torch.nn.parallel.DistributedDataParallel):
    """
    torch's `DistributedDataParallel`, skipping the gradient all-reduce of every sequential mask-accumulation
    pass but the last of its batch. A pass's `mask_pass` (given by the "maelmo_btbptt" loader) and the
    model's `mask_accumulation_passes` tell which pass is the last; a model without them (or a batched
    model) synchronises every pass, as plain DDP does.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._unsynchronised_passes = 0

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self.training and torch.is_grad_enabled():
            self.require_backward_grad_sync = self._synchronise(kwargs.get("mask_pass"))
        return super().forward(*inputs, **kwargs)

    def _synchronise(self, mask_pass: Any) -> bool:
        passes = getattr(self.module, "mask_accumulation_passes", 1)
        if mask_pass is None or passes <= 1:
            return True
        mask_pass = int(mask_pass)
        if mask_pass == 0 and self._unsynchronised_passes:
            # A new batch while the last one's gradients were never reduced: the workers would step apart.
            raise RuntimeError(
                f"A batch ended after {self._unsynchronised_passes} of its {passes} mask-accumulation passes: "
                f"set the maelmo_btbptt loader's mask_accumulation_passes and the trainer's "
                f"num_gradient_accumulation_steps to the model's num_mask_sets ({passes})."
            )
        if mask_pass == passes - 1:
            self._unsynchronised_passes = 0
            return True
        self._unsynchronised_passes += 1
        return False


@DdpAccelerator.register("maelmo_ddp")
class MaskAccumulatingDdpAccelerator(TorchDdpAccelerator):
    """
    AllenNLP's "torch" accelerator with `MaskAccumulatingDdp` in place of `DistributedDataParallel`: under
    sequential mask accumulation, one gradient all-reduce per update instead of k. Use it in the config's
    distributed block, `"ddp_accelerator": {"type": "maelmo_ddp"}`; the workers torchrun starts use it
    always. Any other model trains as with "torch".

    Registered as a `DdpAccelerator` with name "maelmo_ddp".

    # Parameters

    find_unused_parameters : `bool`, optional (default = `False`)
        Passed to `DistributedDataParallel`, as with "torch".
    local_rank, world_size, cuda_device :
        Filled in by AllenNLP's trainer, as with "torch".
    """

    def wrap_model(self, model: Model) -> tuple[Model, DdpWrappedModel]:
        # TorchDdpAccelerator.wrap_model with the subclass: the same device placement and state-dict hooks.
        on_cpu = self.cuda_device == torch.device("cpu")
        if not on_cpu:
            model = model.cuda(self.cuda_device)
        wrapped = MaskAccumulatingDdp(
            model, device_ids=None if on_cpu else [self.cuda_device], **self._ddp_kwargs
        )
        wrapped._register_state_dict_hook(TorchDdpAccelerator._remove_torch_ddp_prefix)
        wrapped._register_load_state_dict_pre_hook(TorchDdpAccelerator._add_torch_ddp_prefix)
        return model, DdpWrappedModel(wrapped, local_rank=self.local_rank, world_size=self.world_size)
