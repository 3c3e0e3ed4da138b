"""
The `maelmo` command's light front: what it can answer before it imports AllenNLP, torch or the plugin
(`--help`, usage errors, refusals that need no model, packaged config names), and the start-up hooks of the
installed `.pth` file. Standard library only; importing `maelmo_plugin` is what loads the rest.
"""
