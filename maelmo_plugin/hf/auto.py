"""
The export's classes, registered with `transformers`' Auto factories when the plugin is imported: in a process
that imports `maelmo_plugin`, `AutoConfig` and `AutoModel*` build a Masked ELMo from an export, or from its
config alone, without `trust_remote_code`. AllenNLP's `pretrained_transformer` and
`pretrained_transformer_mismatched` embedders need this: they build the model from its config without that
flag when an archive is loaded (`load_weights: false`), which no `transformer_kwargs` reaches.

Without the plugin, the export's own `auto_map` and `trust_remote_code=True` do the same.
"""

import transformers

from maelmo_plugin.hf.configuration_masked_elmo import MaskedElmoConfig
from maelmo_plugin.hf.modeling_masked_elmo import AUTO_CLASSES

transformers.AutoConfig.register(MaskedElmoConfig.model_type, MaskedElmoConfig, exist_ok=True)
for _auto_class, _model_class in AUTO_CLASSES.items():
    getattr(transformers, _auto_class).register(MaskedElmoConfig, _model_class, exist_ok=True)
