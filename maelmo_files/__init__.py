"""
What works on the plugin's files without a model: text files read whatever their compression, the partial
outputs that commands write aside, the special tokens of a word-piece vocabulary and the trainer of one
(`maelmo-vocab`), and the HDF5 layout of the vectors with the merge of their shards (`maelmo-merge`).

A floor between the declarations (`maelmo_declarations/`, the standard library only) and the plugin
(`maelmo_plugin/`): it imports the declarations and light libraries (tokenizers, numpy, h5py), never torch,
AllenNLP, spaCy or transformers (`tests/layering_test.py`), so that the `maelmo` front runs the model-free
commands whole without importing the plugin, whose import registers every class and costs seconds. The plugin
imports each module by name; nothing is re-exported here.
"""
