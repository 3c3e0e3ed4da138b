// A CPU-size Masked ELMo: the same code and procedure as pretrain.jsonnet, with smaller sizes, so that it
// trains in a few minutes on the embedded sample corpus (the README's main job), or in an hour or so on
// WikiText-2 (see the README for the command and the figures it reached).
local common = import "pretrain_common.libsonnet";

common.pretrain({
  dim: 128,
  cells: 512,
  layers: 2,
  sequence_length: 64,
  batch_size: 32,
  epochs: 10,
  mask_sets: 1,
  dropout: 0.1,
})
