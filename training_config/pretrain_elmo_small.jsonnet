// A CPU-size ELMo biLM: the same code and procedure as pretrain_elmo.jsonnet (ELMo, Peters et al., 2018, as
// the baseline of Masked ELMo's Table 4), with the sizes of pretrain_small.jsonnet, so that it trains in a
// few minutes on the embedded sample corpus: projection 64, 512 cells, 64-token windows (as the small
// Masked ELMo; ELMo's 20 would waste the small corpus's long-range context), and the fused cell, which is
// several times faster on CPU than ELMo's cell (a Python loop over time steps).
local common = import "pretrain_common.libsonnet";

common.elmo_pretrain({
  projection: 64,
  cells: 512,
  layers: 2,
  sequence_length: 64,
  batch_size: 32,
  epochs: 10,
  dropout: 0.1,
  cell: "fused",
})
