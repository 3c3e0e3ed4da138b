from maelmo_plugin.lm.training.exact_resume import ExactResumeCallback  # noqa: F401
from maelmo_plugin.lm.training.validation_curve import ValidationCurveCallback  # noqa: F401
