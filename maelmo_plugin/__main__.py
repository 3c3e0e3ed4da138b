"""
`python -m maelmo_plugin ...`, and what `maelmo ...` runs once `maelmo_cli/main.py` has answered what needs no
model: AllenNLP's command line with this plugin loaded, from any directory. `allennlp` itself finds the plugin only through `.allennlp_plugins` in the working directory (the
repository root has one), `--include-package maelmo_plugin`, or AllenNLP's global plugins file
(`~/.allennlp/plugins`, one package name per line); `maelmo train ...`, `maelmo maelmo-vocab ...` need none
of them. A config named as a packaged one (`maelmo train lm/pretrain_small -s DIR`) is read from the package
when no such file exists (`maelmo_declarations/packaged_configs.py`).

Under torchrun (`torchrun ... -m maelmo_plugin train CONFIG -s DIR`), `train` runs this process as one worker
of torchrun's group (`training/torchrun.py`).
"""


def main() -> None:
    import os
    import sys

    from maelmo_declarations.top_level import answer_top_level

    answer_top_level(sys.argv[1:])  # --help, --version, a mistyped command: before AllenNLP loads
    from allennlp.commands import main as allennlp_main
    from allennlp.common.checks import ConfigurationError

    import maelmo_plugin  # noqa: F401  registers the classes and the maelmo-* subcommands
    from maelmo_declarations.packaged_configs import resolve_in_command_line, with_packaged_config
    from maelmo_declarations.refusals import Refusal
    from maelmo_plugin.training import torchrun

    # A refusal (a `Refusal`, or AllenNLP's `ConfigurationError`: a bad config, a folder of another run,
    # torchrun's variables) is one line on stderr and exit status 2, as argparse's usage errors; under torchrun,
    # from the first worker only (every worker gets the same refusal).
    quiet = False
    try:
        if sys.argv[1:2] == ["train"] and torchrun.under_torchrun():
            # `torchrun ... -m maelmo_plugin train ...`: this process is one worker of torchrun's group.
            quiet = os.environ["RANK"] != "0"
            try:
                argv = resolve_in_command_line(sys.argv[1:])
            except ValueError as error:
                raise Refusal(str(error)) from None
            torchrun.train_command(argv)
            return
        sys.argv[1:] = with_packaged_config(sys.argv[1:])
        allennlp_main(prog="maelmo")
    except (Refusal, ConfigurationError) as error:
        if not quiet:
            print(f"maelmo: error: {error}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
