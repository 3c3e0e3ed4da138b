# Importing `subcommands` registers a `Subcommand` with AllenNLP for each row of the command table; the other
# modules hold the jobs those rows name, imported when a command runs.
from maelmo_plugin.commands import subcommands  # noqa: F401
