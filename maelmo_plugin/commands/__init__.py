# Importing the modules registers their `Subcommand`s with AllenNLP.
from maelmo_plugin.commands.config import PrintConfig  # noqa: F401
from maelmo_plugin.commands.embed import Embed  # noqa: F401
from maelmo_plugin.commands.export import Export  # noqa: F401
from maelmo_plugin.commands.merge import Merge  # noqa: F401
from maelmo_plugin.commands.prepare import Prepare  # noqa: F401
from maelmo_plugin.commands.wordpiece_vocab import WordpieceVocab, train_wordpiece_vocab  # noqa: F401
