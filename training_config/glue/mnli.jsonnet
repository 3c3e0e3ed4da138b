// GLUE mnli with the paper's protocol (see glue.libsonnet for the variables that select the encoder).
local glue = import "glue.libsonnet";

glue.task("mnli") + {
  settings:: {
    seed: 13370,
    cuda_device: -1,  // CPU; a GPU index (0) runs it there, with AMP
    checkpoint_seconds: 900,  // the most a crash costs
    deterministic: false,  // true: bit-identical GPU runs, at some cost in speed
  },
}
