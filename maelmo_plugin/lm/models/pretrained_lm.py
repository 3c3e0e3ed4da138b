"""
A pre-trained language model read from its archive, to pre-train further: continued (domain-adaptive)
pre-training on a user's own text (`training_config/lm/continue.jsonnet`, docs/continued_pretraining.md).
"""

from typing import Optional

from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model

from maelmo_plugin.common.archive_assets import find_asset, holds_trained_weights, save_asset
from maelmo_plugin.lm.loading import build_from_copy, copy_writer, open_language_model
from maelmo_plugin.lm.models.wordpiece_lm import WordpieceLanguageModel

KIND = "language_model"


def pretrained_language_model(
    vocab: Vocabulary, archive_file: str, serialization_dir: Optional[str] = None
) -> Model:
    copy = find_asset(serialization_dir, KIND, archive_file)
    if copy is not None and holds_trained_weights(serialization_dir):
        return build_from_copy(copy)  # loading the new archive, or resuming: its weights overwrite these
    model, model_params = open_language_model(archive_file, False, serialization_dir)
    if not isinstance(model, WordpieceLanguageModel):
        raise ConfigurationError(
            f"{archive_file} holds a {type(model).__name__}, not a language model of this plugin "
            f"(maelmo_masked_elmo_lm or maelmo_elmo_lm) to pre-train further."
        )
    _check_same_pieces(archive_file, model, vocab)
    save_asset(serialization_dir, KIND, archive_file, copy_writer(model, model_params))
    return model


def _check_same_pieces(archive_file: str, model: WordpieceLanguageModel, vocab: Vocabulary) -> None:
    namespace = model.namespace
    ours, theirs = (
        [source.get_token_from_index(index, namespace) for index in range(source.get_vocab_size(namespace))]
        for source in (vocab, model.vocab)
    )
    if ours != theirs:
        raise ConfigurationError(
            f"The config's word-piece vocabulary ({len(ours)} pieces) is not the one {archive_file} was "
            f"pre-trained with ({len(theirs)} pieces): set MAELMO_VOCAB to the vocabulary its pre-training "
            f"config names. Continued pre-training keeps the vocabulary; a new one needs training from scratch."
        )


@Model.register("maelmo_pretrained_lm", constructor="from_archive_file")
class PretrainedLanguageModel(Model):
    """
    Registered as a `Model` with name "maelmo_pretrained_lm". Its constructor returns the archive's own model
    (a `maelmo_masked_elmo_lm` over any encoder, or a `maelmo_elmo_lm`), with its trained weights, its
    architecture and its masking, and the run trains it as usual.

    The architecture is copied into the run's `maelmo_assets/` (as a GLUE model's encoder is), so that the
    new `model.tar.gz` loads where the archive it started from is gone: at load, or when the run resumes from
    a checkpoint, the model is built from the copy and its weights come from the new archive or checkpoint.

    # Parameters

    vocab : `Vocabulary`
        The run's vocabulary (the config's `vocabulary`); it must be the archive's, piece for piece, since
        the archive's embedding is indexed by its ids.
    archive_file : `str`
        The pre-trained `model.tar.gz` (or its serialization directory, or a Hugging Face export).
    serialization_dir : `str`, optional (default = `None`)
        Given by AllenNLP, not set in configs.
    """

    @classmethod
    def from_archive_file(
        cls, vocab: Vocabulary, archive_file: str, serialization_dir: Optional[str] = None
    ) -> Model:
        return pretrained_language_model(vocab, archive_file, serialization_dir)
