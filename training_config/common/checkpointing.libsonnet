// Checkpoints that survive a crash. Every MAELMO_CHECKPOINT_SECONDS (and at every epoch's
// end) the trainer writes a checkpoint that `allennlp train -r` resumes from exactly, mid-epoch included:
// "maelmo_atomic" ignores a checkpoint whose writing was interrupted, and the "maelmo_exact_resume" callback
// (in each config's callbacks) adds what AllenNLP does not keep (random generators, carried LSTM states).
{
  checkpointer(keep):: {
    type: "maelmo_atomic",
    keep_most_recent_by_count: keep,
    save_every_num_seconds: std.parseInt(std.extVar("MAELMO_CHECKPOINT_SECONDS")),
  },
}
