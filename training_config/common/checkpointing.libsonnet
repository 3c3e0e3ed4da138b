// Checkpoints that survive a crash. Every `seconds` (and at every epoch's end) the trainer writes a
// checkpoint that `allennlp train -r` resumes from exactly, mid-epoch included: "maelmo_atomic" ignores a
// checkpoint whose writing was interrupted, and the "maelmo_exact_resume" callback (in each config's
// callbacks) adds what AllenNLP does not keep (random generators, carried LSTM states).
{
  checkpointer(keep, seconds):: {
    type: "maelmo_atomic",
    keep_most_recent_by_count: keep,
    save_every_num_seconds: seconds,
  },
  // settings.deterministic: deterministic kernels on a GPU (see maelmo_plugin/training/determinism.py).
  determinism(settings):: if settings.deterministic then [{ type: "maelmo_deterministic" }] else [],
}
