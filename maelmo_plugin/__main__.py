"""
`maelmo ...` (and `python -m maelmo_plugin ...`): AllenNLP's command line with this plugin loaded, from any
directory. `allennlp` itself finds the plugin only through `.allennlp_plugins` in the working directory (the
repository root has one), `--include-package maelmo_plugin`, or AllenNLP's global plugins file
(`~/.allennlp/plugins`, one package name per line); `maelmo train ...`, `maelmo maelmo-vocab ...` need none
of them.
"""


def main() -> None:
    from allennlp.commands import main as allennlp_main

    import maelmo_plugin  # noqa: F401  registers the classes and the maelmo-* subcommands

    allennlp_main(prog="maelmo")


if __name__ == "__main__":
    main()
