# Importing the module registers its `Subcommand` with AllenNLP.
from maelmo_plugin.commands.wordpiece_vocab import WordpieceVocab, train_wordpiece_vocab  # noqa: F401
