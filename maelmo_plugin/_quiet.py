"""
Silences third-party deprecation noise that says nothing to a user of this plugin.

Imported first by `maelmo_plugin/__init__.py`, before anything imports allennlp: allennlp imports fairscale,
whose `torch.cuda.amp.custom_fwd` and `torch.jit.script` uses warn on torch 2.x, and AllenNLP's trainer
calls the deprecated `torch.cuda.amp.autocast` every epoch. Only these exact sources are filtered.
"""

import warnings

for _module in (r"fairscale(\..*)?", r"torch\.jit\._script", r"allennlp\.training\.gradient_descent_trainer"):
    warnings.filterwarnings("ignore", category=FutureWarning, module=_module)
warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
warnings.filterwarnings("ignore", message=r"`torch\.cuda\.amp\.autocast", category=FutureWarning)
# torch says once per process that oneDNN has no projected LSTM and that it uses its native kernel: that is
# the kernel we choose on CPU (docs/performance.md), so the notice only alarms users.
warnings.filterwarnings(
    "ignore", message="LSTM with projections is not supported with oneDNN", category=UserWarning
)
