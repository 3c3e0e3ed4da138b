"""
The jobs of the model-free commands (`maelmo-vocab`, `maelmo-merge`), which their rows of the command table
name (`maelmo_declarations/commands/`): the `maelmo` front runs them without importing the plugin.
"""
