"""
The light half of each `maelmo-*` subcommand: its name, description, arguments and the refusals that need no
model. The plugin's `Subcommand` (`maelmo_plugin/commands/`) builds its parser and runs its checks from the
same module, and does the work.
"""

from . import config, embed, export, merge, prepare, vocab

COMMANDS = {command.NAME: command for command in (config, embed, export, merge, prepare, vocab)}
