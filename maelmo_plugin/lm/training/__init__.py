from maelmo_plugin.lm.training.exact_resume import ExactResumeCallback  # noqa: F401
