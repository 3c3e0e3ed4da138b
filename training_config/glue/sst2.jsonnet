// GLUE sst2 with the paper's protocol (see glue.libsonnet for the variables that select the encoder).
(import "glue.libsonnet").task("sst2")
