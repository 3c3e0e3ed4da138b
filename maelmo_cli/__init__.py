"""
The `maelmo` command's light front (`main.py`): it answers what needs no model from the declarations
(`maelmo_declarations/`) before it imports AllenNLP, torch or the plugin, and hands the rest to
`maelmo_plugin/__main__.py`. Nothing imports this package but the `maelmo` entry point.
"""
