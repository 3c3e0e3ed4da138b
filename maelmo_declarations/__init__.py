"""
What the commands declare, in the standard library only, so that the `maelmo` front (`maelmo_cli/`) answers with
it before AllenNLP, torch or the plugin is imported, and the plugin builds AllenNLP's command line from the same
declarations: the command table (`commands/`, one `Command` a row, `command.py`), their options
(`options.py`), `Refusal` and the checks that need no model (`refusals.py`), what a command may replace
(`owned_outputs.py`), `--shard K/N` (`shards.py`), the packaged configs and the answers of `maelmo` alone
(`top_level.py`). The library imports each module by name; nothing is re-exported here.
"""
