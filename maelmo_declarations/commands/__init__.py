"""
The command table: one `Command` (`maelmo_declarations/command.py`) for each `maelmo-*` subcommand, declared in
the module of its name. The `maelmo` front and AllenNLP's command line are both generated from it, and the
contract test runs every row (`tests/cli/contract_test.py`): a command added here is tested there.
"""

from maelmo_declarations.command import Command
from maelmo_declarations.commands import (
    arena,
    config,
    embed,
    export,
    merge,
    prepare,
    ray_embed,
    torchrun,
    vocab,
)

COMMANDS: dict[str, Command] = {
    module.COMMAND.name: module.COMMAND
    for module in (arena, config, embed, export, merge, prepare, ray_embed, torchrun, vocab)
}
