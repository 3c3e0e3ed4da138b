// GLUE cola with the paper's protocol (see glue.libsonnet for the variables that select the encoder).
(import "glue.libsonnet").task("cola")
